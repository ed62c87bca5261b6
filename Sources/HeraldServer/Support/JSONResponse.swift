import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// Builds `application/json` responses from `JSONObject`s.
enum JSONResponse {
    static func make(status: HTTPResponse.Status, body: JSONObject, headers: HTTPFields = [:]) -> Response {
        let data = (try? JSONValue.object(body).encoded()) ?? Data(#"{"error":"internal error"}"#.utf8)
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
