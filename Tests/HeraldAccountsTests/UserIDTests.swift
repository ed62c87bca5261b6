import HeraldCore
import Testing

@Suite("UserID")
struct UserIDTests {
    @Test func takesSixtyFourHexCharactersInEitherCaseAndKeepsTheLowercaseForm() throws {
        let upper = String(repeating: "AB", count: 32)
        let userID = try #require(UserID(upper))
        #expect(userID.text == upper.lowercased())
        #expect(userID == UserID(upper.lowercased()))
        #expect(userID.lookupHash == Secrets.hash(upper.lowercased()))
    }

    @Test(arguments: ["", String(repeating: "a", count: 63), String(repeating: "a", count: 65), String(repeating: "g", count: 64)])
    func refusesAnythingElse(text: String) {
        #expect(UserID(text) == nil)
        #expect(!UserID.accepts(text))
    }

    @Test func randomOnesAreLowercaseAndDistinct() throws {
        let first = UserID.random()
        let second = UserID.random()
        #expect(first != second)
        #expect(UserID(first.text) == first)
        #expect(first.text == first.text.lowercased())
    }

    @Test func aStoreFailureKeepsItsCause() async {
        struct DiskFull: Error, CustomStringConvertible { var description: String { "disk I/O error" } }
        await #expect(throws: APITokenError.storeUnavailable(StoreUnavailable(cause: "disk I/O error"))) {
            try await StoreUnavailable.during(as: APITokenError.storeUnavailable) { () async throws -> Int in throw DiskFull() }
        }
    }
}
