import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// Builds `application/json` responses from `JSONObject`s and ``JSONObjectWriter``s.
enum JSONResponse {
    static func make(status: HTTPResponse.Status, body: JSONObject, headers: HTTPFields = [:]) -> Response {
        let data = (try? JSONValue.object(body).encoded()) ?? Data(#"{"error":"internal error"}"#.utf8)
        return make(status: status, bytes: ByteBuffer(bytes: data), headers: headers)
    }

    static func make(status: HTTPResponse.Status, body: JSONObjectWriter, headers: HTTPFields = [:]) -> Response {
        make(status: status, bytes: ByteBuffer(bytes: body.finished()), headers: headers)
    }

    private static func make(status: HTTPResponse.Status, bytes: ByteBuffer, headers: HTTPFields) -> Response {
        var fields = headers
        if fields[.contentType] == nil { fields[.contentType] = "application/json; charset=utf-8" }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: bytes))
    }
}
