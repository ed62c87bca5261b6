import Foundation
import HTTPTypes
import HeraldActivities
import HeraldCore
import Hummingbird
import Logging
import NIOCore

/// PushWard's activity paths, at PushWard's addresses (its `openapi.yaml`), so that its clients work against Herald by
/// changing the base URL: `GET /activities`, `POST /activities`, `GET`/`PATCH`/`DELETE /activities/{slug}` and
/// `POST /activities/{slug}/snooze`; `GET /activities/{slug}?wait=N` holds the read of an unanswered approval card. Authorised by API tokens with PushWard's scopes and slugs
/// (``PushWardAuthorizer``); every refusal is problem details (``ErrorShape/problemDetails``) with PushWard's `code`.
struct PushWardActivitiesController<Context: RemoteAddressRequestContext>: Sendable {
    let service: ActivityService
    let authorizer: PushWardAuthorizer
    let bodyLimit: Int
    /// Writes per API token (429 `rate_limit.exceeded` past it); reads are not limited.
    let writeLimiter: ActivityWriteLimiter
    /// Holds `GET /activities/{slug}?wait=N` of an unanswered approval card (none: the read answers at once).
    var approvalWaiters: ApprovalWaiters? = nil

    func addRoutes(to router: some RouterMethods<Context>) {
        let activities = router.group("activities").add(middleware: ErrorShapeMiddleware(.problemDetails))
        activities.get(use: list)
        activities.post(use: create)
        activities.get(":slug", use: read)
        activities.patch(":slug", use: patch)
        activities.delete(":slug", use: delete)
        activities.post(":slug/snooze", use: snooze)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .activityUpdate)
        let parameters = request.uri.queryParameters
        let query = try problem {
            try ActivityListQuery.parse(
                limit: parameters["limit"].map(String.init), after: parameters["after"].map(String.init),
                state: parameters["state"].map(String.init))
        }
        let all = try await problem { try await service.activities(of: device) }
        let matching = all.filter { activity in
            guard token.grants.allows(slug: activity.slug) else { return false }
            if let state = query.state, state != activity.state { return false }
            if let after = query.afterSlug, activity.slug <= after { return false }
            return true
        }
        let page = Array(matching.prefix(query.limit))
        return Self.json(.ok, try ActivityJSON.page(page, hasMore: matching.count > page.count))
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let body = try await Self.body(of: request, limit: bodyLimit)
        let creation = try problem { try ActivityRequest.create(json: body) }
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .activityManage, slug: creation.slug)
        try problem { try writeLimiter.take(token.id) }
        let outcome = try await problem { try await service.change(.create(creation), slug: creation.slug, of: device) }
        return try Self.answer(outcome, status: .created)
    }

    @Sendable func read(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        let (_, device) = try await authorizer.authorize(request, context: context, scope: .activityUpdate, slug: slug)
        let wait = try problem { try ActivityWait.seconds(request.uri.queryParameters["wait"].map(String.init)) }
        var activity = try await problem { try await service.activity(slug, of: device) }
        if wait > 0, let approvalWaiters, !ApprovalRules.isSettled(activity) {
            // An unanswered approval card: held until it is answered (or ends) or `wait` passes, then read again.
            do {
                _ = try await approvalWaiters.wait(for: ActivityKey(deviceID: device.id, slug: slug), upTo: .seconds(wait))
            } catch {
                throw Self.apiError(.serviceUnavailable(cause: "\(error)"))
            }
            activity = try await problem { try await service.activity(slug, of: device) }
        }
        let include = request.uri.queryParameters["include"].map(String.init)
        return Self.json(.ok, try ActivityJSON.body(activity, includeLogBacklog: ActivityListQuery.includesLogBacklog(include)))
    }

    @Sendable func patch(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .activityUpdate, slug: slug)
        let upsert = try problem { try ActivityRequest.upsert(request.uri.queryParameters.getAll("upsert").map { String($0) }) }
        let body = try await Self.body(of: request, limit: bodyLimit)
        let changes = try problem { try ActivityRequest.patch(json: body) }
        try problem { try writeLimiter.take(token.id) }
        let outcome = try await problem {
            try await service.change(
                .patch(slug: slug, changes, upsert: upsert), slug: slug, of: device, mayCreate: token.grants.allows(.activityManage))
        }
        return try Self.answer(outcome, status: outcome.action == .created ? .created : .ok)
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .activityManage, slug: slug)
        try problem { try writeLimiter.take(token.id) }
        _ = try await problem { try await service.change(.delete, slug: slug, of: device) }
        return Response(status: .noContent)
    }

    @Sendable func snooze(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .activityUpdate, slug: slug)
        try problem { try writeLimiter.take(token.id) }
        let buffer = try await request.body.collect(upTo: bodyLimit)
        var seconds: Int?
        if buffer.readableBytes > 0 {
            guard case .object(let object)? = try? JSONValue.decode(Data(buffer.readableBytesView)) else {
                throw Self.apiError(ActivityProblem(code: .requestBodyInvalid, status: 400, detail: "the body is not a JSON object"))
            }
            if let value = object["seconds"], value != .null {
                guard case .int(let whole) = value, (1...86_400).contains(whole) else {
                    throw Self.apiError(
                        ActivityProblem(code: .requestBodyInvalid, status: 400, detail: "seconds must be an integer between 1 and 86400"))
                }
                seconds = whole
            }
        }
        let outcome = try await problem { try await service.change(.snooze(seconds: seconds), slug: slug, of: device) }
        return try Self.answer(outcome, status: .ok)
    }

    // MARK: Answers

    /// An activity with `X-Resource-Action`.
    private static func answer(_ outcome: ActivityOutcome, status: HTTPResponse.Status) throws -> Response {
        guard let activity = outcome.activity else { return Response(status: .noContent) }
        var response = json(status, try ActivityJSON.body(activity))
        response.headers[.resourceAction] = outcome.action.rawValue
        return response
    }

    private static func json(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The `{slug}` of the path, checked (400 `slug.invalid`).
    private static func slug(_ context: Context) throws -> String {
        let slug = context.parameters.get("slug") ?? ""
        guard ActivitySlug.isValid(slug) else { throw apiError(.slugInvalid) }
        return slug
    }

    /// The request body's bytes (400 `request.body_required` when empty, 413 past the limit).
    private static func body(of request: Request, limit: Int) async throws -> [UInt8] {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: limit)
        }
        guard buffer.readableBytes > 0 else { throw apiError(.bodyRequired) }
        return Array(buffer.readableBytesView)
    }

    /// Runs `body`, answering its ``ActivityProblem`` as problem details.
    private func problem<Value>(_ body: () throws -> Value) throws -> Value {
        do {
            return try body()
        } catch let problem as ActivityProblem {
            throw Self.apiError(problem)
        }
    }

    private func problem<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch let problem as ActivityProblem {
            throw Self.apiError(problem)
        }
    }

    /// An ``ActivityProblem`` as the API error the problem-details shape answers: its code, status and detail, and
    /// `errors` / `retry_after_ms` (with `Retry-After`) where it has them.
    static func apiError(_ problem: ActivityProblem) -> APIError {
        var extra: JSONObject = [:]
        if !problem.fieldErrors.isEmpty {
            extra["errors"] = .array(
                problem.fieldErrors.map { error in
                    var object: JSONObject = ["message": .string(error.message)]
                    if let location = error.location { object["location"] = .string(location) }
                    if let value = error.value { object["value"] = value }
                    return .object(object)
                })
        }
        var headers: HTTPFields = [:]
        if let milliseconds = problem.retryAfterMilliseconds {
            extra["retry_after_ms"] = .int(milliseconds)
            headers[.retryAfter] = "\(problem.retryAfterSeconds ?? 1)"
        }
        let status = HTTPResponse.Status(code: problem.status, reasonPhrase: problem.title)
        var error = APIError.problem(problem.code.rawValue, status: status, detail: problem.detail, extra: extra, headers: headers)
        error.cause = problem.cause
        return error
    }
}

extension HTTPField.Name {
    /// PushWard's `X-Resource-Action: created|updated` of an upsert's answer.
    static let resourceAction = HTTPField.Name("X-Resource-Action")!
}
