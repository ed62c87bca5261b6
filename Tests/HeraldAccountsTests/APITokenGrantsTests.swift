import HeraldCore
import Testing

/// The rules of a token's scopes and slugs (PushWard's "Authentication"), without a socket.
@Suite("API token grants")
struct APITokenGrantsTests {
    @Test func withoutScopesOrSlugsATokenMayDoEverything() throws {
        let grants = try APITokenGrants(scopes: nil, slugs: nil)
        #expect(grants == .everything)
        #expect(APITokenScope.allCases.allSatisfy(grants.allows))
        #expect(grants.allows(slug: "anything"))
    }

    @Test func manageIncludesUpdateButNotTheOtherWayRound() throws {
        let manage = try APITokenGrants(scopes: ["activity:manage"], slugs: nil)
        #expect(manage.allows(.activityUpdate) && manage.allows(.activityManage) && !manage.allows(.notifications))
        let update = try APITokenGrants(scopes: ["activity:update"], slugs: nil)
        #expect(update.allows(.activityUpdate) && !update.allows(.activityManage))
    }

    @Test func slugsAreExactOrPrefixesEndingInAStar() throws {
        let grants = try APITokenGrants(scopes: nil, slugs: ["oven", "printer-*"])
        #expect(grants.allows(slug: "oven") && !grants.allows(slug: "oven2") && !grants.allows(slug: "ove"))
        #expect(grants.allows(slug: "printer-1") && grants.allows(slug: "printer-") && !grants.allows(slug: "printer"))
        #expect(try APITokenGrants(scopes: nil, slugs: ["*"]).allows(slug: "x"))
    }

    @Test(arguments: [
        (["activity:write"], nil, "scopes"), ([], nil, "scopes"), (nil, ["-x"], "slugs"), (nil, ["a*b"], "slugs"),
        (nil, [""], "slugs"), (nil, [String(repeating: "a", count: 129)], "slugs"), (nil, ["ö"], "slugs"),
    ] as [([String]?, [String]?, String)])
    func refusedGrantsNameTheirField(scopes: [String]?, slugs: [String]?, field: String) {
        #expect {
            try APITokenGrants(scopes: scopes, slugs: slugs)
        } throws: { error in
            guard case .invalidGrant(let named, _) = error as? APITokenError else { return false }
            return named == field
        }
    }

    @Test func theStoredFormReadsBackTheSameGrantsAndNullColumnsMeanEverything() throws {
        let grants = try APITokenGrants(scopes: ["notifications", "activity:update"], slugs: ["a", "b-*"])
        #expect(APITokenGrants(storedScopes: grants.storedScopes, storedSlugs: grants.storedSlugs) == grants)
        #expect(grants.storedScopes == "activity:update,notifications")
        #expect(APITokenGrants(storedScopes: nil, storedSlugs: nil) == .everything)
    }
}
