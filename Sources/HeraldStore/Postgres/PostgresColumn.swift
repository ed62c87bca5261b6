import Foundation
import NIOCore
import PostgresNIO

/// One column of a set of rows, bound as one PostgreSQL array (`$1::text[]`) that a statement takes apart with
/// `unnest`: a batch of any size is one statement. Unlike PostgresNIO's own `Array` encoding, elements may be NULL.
///
/// ```swift
/// let errors = PostgresColumn(outcomes.map(\.notification.lastError))  // [String?]
/// try await connection.query("UPDATE … FROM unnest(\(ids), \(errors)) AS o (id, last_error) WHERE …", logger: logger)
/// ```
struct PostgresColumn<Element: PostgresArrayEncodable>: PostgresThrowingDynamicTypeEncodable {
    var values: [Element?]

    init(_ values: [Element?]) {
        self.values = values
    }

    var psqlType: PostgresDataType { Element.psqlArrayType }
    var psqlFormat: PostgresFormat { .binary }

    /// PostgreSQL's binary array format (``PostgresArrayFormat``), each element encoded as its type encodes it.
    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) throws {
        try PostgresArrayFormat.writeHeader(
            count: values.count, hasNulls: values.contains { $0 == nil }, elementType: Element.psqlType, into: &buffer)
        for value in values {
            if let value {
                let lengthIndex = buffer.writerIndex
                buffer.writeInteger(0, as: Int32.self)
                try value.encode(into: &buffer, context: context)
                buffer.setInteger(try PostgresArrayFormat.length(buffer.writerIndex - lengthIndex - 4), at: lengthIndex)
            } else {
                buffer.writeInteger(-1, as: Int32.self)
            }
        }
    }
}

/// PostgreSQL's binary array format (`array_recv`) for one dimension: the number of dimensions, a has-NULLs flag, the
/// element type, the length and lower bound of the dimension, then each element as its length (-1 for NULL) and its
/// bytes. Lengths are 32-bit: a longer array or element is an error, never a trap.
enum PostgresArrayFormat {
    struct TooLong: Error, CustomStringConvertible {
        var count: Int
        var description: String { "an array or element of \(count) (more than PostgreSQL's 32-bit length)" }
    }

    static func writeHeader(count: Int, hasNulls: Bool, elementType: PostgresDataType, into buffer: inout ByteBuffer) throws {
        let length = try length(count)
        buffer.writeInteger(count == 0 ? 0 : 1, as: Int32.self)
        buffer.writeInteger(hasNulls ? 1 : 0, as: Int32.self)
        buffer.writeInteger(elementType.rawValue)
        guard count > 0 else { return }
        buffer.writeInteger(length)
        buffer.writeInteger(1, as: Int32.self)
    }

    static func length(_ count: Int) throws -> Int32 {
        guard let length = Int32(exactly: count) else { throw TooLong(count: count) }
        return length
    }
}

/// A column of bytes (`bytea[]`) from `Data`, written straight into the statement's buffer (no `ByteBuffer` made for
/// each value first: a payload is copied once, not twice).
struct PostgresBytesColumn: PostgresThrowingDynamicTypeEncodable {
    var values: [Data?]

    var psqlType: PostgresDataType { .byteaArray }
    var psqlFormat: PostgresFormat { .binary }

    /// ``PostgresArrayFormat``, with each element's bytes as they are.
    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) throws {
        try PostgresArrayFormat.writeHeader(
            count: values.count, hasNulls: values.contains { $0 == nil }, elementType: .bytea, into: &buffer)
        for value in values {
            if let value {
                buffer.writeInteger(try PostgresArrayFormat.length(value.count))
                buffer.writeBytes(value)
            } else {
                buffer.writeInteger(-1, as: Int32.self)
            }
        }
    }
}
