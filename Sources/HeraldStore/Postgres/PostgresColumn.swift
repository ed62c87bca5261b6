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

    /// PostgreSQL's binary array format (`array_recv`): dimensions, a has-NULLs flag, the element type, the length and
    /// lower bound of the one dimension, then each element as its length (-1 for NULL) and its bytes.
    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) throws {
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(values.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !values.isEmpty else { return }
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(1, as: Int32.self)
        for value in values {
            if let value {
                let lengthIndex = buffer.writerIndex
                buffer.writeInteger(0, as: Int32.self)
                try value.encode(into: &buffer, context: context)
                buffer.setInteger(Int32(buffer.writerIndex - lengthIndex - 4), at: lengthIndex)
            } else {
                buffer.writeInteger(-1, as: Int32.self)
            }
        }
    }
}

/// A column of bytes (`bytea[]`) from `Data`, written straight into the statement's buffer (no `ByteBuffer` made for
/// each value first: a payload is copied once, not twice).
struct PostgresBytesColumn: PostgresThrowingDynamicTypeEncodable {
    var values: [Data?]

    var psqlType: PostgresDataType { .byteaArray }
    var psqlFormat: PostgresFormat { .binary }

    /// ``PostgresColumn``'s format, with each element's bytes as they are.
    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) throws {
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(values.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(PostgresDataType.bytea.rawValue)
        guard !values.isEmpty else { return }
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(1, as: Int32.self)
        for value in values {
            if let value {
                buffer.writeInteger(Int32(value.count))
                buffer.writeBytes(value)
            } else {
                buffer.writeInteger(-1, as: Int32.self)
            }
        }
    }
}
