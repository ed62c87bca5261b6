import _CryptoExtras

/// Two fixed RSA 2048 keys for the tests' Google service accounts (``FCMTestServiceAccount``).
///
/// Generating an RSA 2048 key costs from 0.1 s to about a second of CPU, and more in a debug build when every test of
/// the run starts at once: enough to hold back the tests beside it past their deadlines. A test that needs a key, not
/// a new one, takes one of these. They are published test material: nothing may trust them.
public enum TestRSAKeys {
    /// The key of every ``FCMTestServiceAccount`` made without one.
    public static let first = parse(firstPEM)
    /// A second, different key: the forger's, in tests that sign with a key the double does not know.
    public static let second = parse(secondPEM)

    private static func parse(_ pem: String) -> _RSA.Signing.PrivateKey {
        do {
            return try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            fatalError("a fixed test key does not parse: \(error)")
        }
    }

    private static let firstPEM =
        """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDSNr16Np4ESRZ9
        fx6CdbX+PQ6kAdiE3eixG3UhPkp/JZgzX9iXoXvIELZm8+6OhEbGRqUbAy5BMptF
        OuQ84/Wtkpbp5s+zsAyMKxGo+QoZvzZ6TBNeoW59MVhLI6TkLBiNokRebAZE2FYN
        81vHj818towpT9timMZeTQhdYXlX3PmkHDsHcsOkOqvjCNRVtzBxfTz0rhbEgt0s
        mluAuWizmFE9C0X/6TIcKRItizXA0kDQwnpKjND6n47k2K/f7apzaFPxxU5w1hfy
        NKZoVL2aCirs5BVbybfn0/Rj4NWlCooXEcvN//3ZTvps3gZTHjOQpSLbH7Ftr5Es
        BOaogMt3AgMBAAECggEAEuA+eGRsy6wNHHIXORYSea9dirBDEyniqftHXmz7qdok
        MMIeWVNIoajlMBke++YjKCJnffr1otNv/4dFFQtP4BOl1dVXeOZJ4iZAkjXhSHmT
        4zxvOtPvxMcdtgrlKhCkQxzl2xKufMJuS8IP+jtOnjBoJTzZ/CBazlSdd9Z3sRdp
        cQf1aZuV66RBWdjUE820jIJLUBZZS2daE93yiejbiMORmyxBerPBR+kBjV8TSJTi
        Q+n/FEu2R4L37aMfLFJxjNFUuuar2AKsmYnQ+kwOflpP3QR86mSZdWCST3HnWSQb
        TGco1y61L+dR/5sT6lhZjeyr2CaNsmjy09qaHw06qQKBgQDpayGLoX3phtf5RSwQ
        rKJaKW2TARHA0ow1h2GCNr0bkA5eTf+fqrNZLImSf9K68230e9Q6cvLyEbAp6m0N
        RaYRklMBMwW2wZn84wk/NWhW1gQ5+UY4eU2Y/VHha3HbJ0cyy3QgUN/6M6BBReTh
        qD7DV2/eJE3mlORb21nlSlWJqQKBgQDmjOuG+3qeTfvWn9OeJE1St0XS7ZX/MvpE
        LTUIMKSiKFOqH4xxu+LEaRp6xKthA3UCbIpp0rV9s/YJzwLIXVJPuEbTdrMPhg9H
        mltTpbGeOELGsJ+RzlfJ8Z6Lhv5eculOWvlLp3x/SAQQMezRHIQ/r3jWJ7mpr4iL
        z+9l9XAgHwKBgD773W1kAinFbPmiJKXLL3PMwfhszXGOXq8C/Ni6FIUfdgEUYume
        kg556hVR0HcJwJ273CR5Z/zRsQtealaueIU9SpCESAJsczS9vn0D2Ee2MCXEkaIj
        eUDS+gktiOdtzdRy+b7Ok+FblN6IEZ6iW20yZsk2Wp7hhk0S/0rTqAkhAoGAcSNc
        fawxWzhHyuY58hQ8gcgAkucWwdqhaA2LRc6hLBaAIC9FO5cJTHuLjA2xUHVi2WKs
        dgv6ForWxa953Ru2xfpXf3RzoL2YB/pesOjSBiPz2Q9Z7zKEcEyLEkuXzn+zsEkC
        p7a0aL3NiKkHXwMQfzQ8J1PtT7EdYAcVo0JT2N8CgYEAtClCdD6XY50DlT5xtMd/
        /7A+VICXE+K5rtSJ4bzDzCkVx30zxNFcwtCJ423J/NOW/JAWFduWM8kaMtTbebLd
        ivAWmlVXCT0GQ9g0SqErxi0IX2qsWKw4GS2euvrgKWAxgkffecFrCWk7GQo+eMbm
        EC1Yk8a4txb/XcYRHiTJ+YY=
        -----END PRIVATE KEY-----
        """

    private static let secondPEM =
        """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC0iQK3OwJiAk8L
        pv3M4vrPscOHeKcXGlG463WPwP64h+zl57YICs1pr0MeqIQHV+qhLtACnsGsOE6W
        JJnNgJgb3GD77AbISCFP8YFbe/BO3nWs5NAMc0RyCtp6A39h6f9P/PVRZ9veI9o2
        9LpcKnTiecCYURa+NIARWysuuNoVHYxyy/pzaKrOOEcO5EjkNI0L+YDVQtB9xbJj
        USBNS9WH0tefb53M8cd0d/iFe/rmO+uMwK6nv76ucojF7NYDxT40jMRGfqGniB36
        zUbYb3i8pUHRrvv7mNpLC+k/gDsNym/P8dbveYyz5+nEAShXTl+0iHT8DS517cAi
        3In10HCdAgMBAAECggEAFay6ZP3CbjppO5SntXzN0Hg+6amYY/tustUgFut8mXKG
        RF7ymZoUadsXI5vnSAtr2cCpTBs71N2ov7lytru452Voxm4irVKNn0+3MGDbq9hl
        B+YrvUbsgYWgj9QSK9MAal3MJSMjQFMNHJp6slyNjnBAKXlY0eqzMoI/17rtQeoH
        3d9uB+dEfVPnqPqgXOt7ttVAFXn+nrrEc7hGBO6Yda+5khp6TsS9Lsqhr+kLL9Wx
        vLT30Q5lsS+zhrtwyQ0nYrIp/j6g1FrrwahWPOlIWPr28RO+BleCfBidUod+wjX+
        JnRZIeyhtNz+J+dr85osqJh+e8+mwNI3TTDbGTQ8UQKBgQDfEnjA64deLqBK9xri
        64vlWY9/UB7I+SzU7YTa7t++hQsuwFw/G18OEJQ1swFNqc4Jb292TVyLnejpnxU9
        Gv7BcdBAhL5ma3a8KbkZ4REdDMhDHLfKu412orAb4Dd2JZkWd7+CzLZu47NydyS5
        Km0wcfv44IoujUuBL97puA3abQKBgQDPLyM2jyZ3QBiqENS769xoNZEwnc74LZuu
        gNQQS9UYOtuH2mWl00EcEgLdr/Fr0Y+g8s+IFNGmiBHNNVaE2/2hJhU5v7rPz12e
        N4f1MRpNEeAaysZeevlQKk2vMMe9LmFxBBuZfDPjtm4aRHTHo7JEgVRuXg8xxVEv
        4Ucp7DsQ8QKBgHU0fWHP3qYrlWkOAIBuBmkQ74aTEDnEQjv2ODHYBJNT0BZWV6GI
        vh7jsxur2+l0aJ8of8YGy7NH2tK1FTGv916ocCUWGfwyRoaC3ZCtYpKC3s30TtUk
        SiWlQSbEXh+jjZXygRs2eDw3Q1fHJfJsSkaD/UI8qB3he2R7RIJEhHLZAoGAQ2Cg
        AgFB0Cw/GSeKF2cX8afiBL59bYZfh7uLu5T9wvh5JlAnGGuAVCGjXvb1+0tWe1Ab
        n7StjYvYxjSfY2urqvmYk4Q/u49Dcc27YEjMtd2nVO823cj+RUzMoLmra2Gm/LsK
        Qrr6oQZV/iLfG4Gn2tF4ZMAgDt6NjZWksASMHPECgYEA27yfwZqLv4667sg4OHjQ
        7RzGLPI6sdFHPhCZP58ZN6LEqpyzP97/PbcQ9V9e1LixnaDC9Nvr18TfZHRL4E1a
        YJzDLXGS64eFI76muhWqA5tUkwzCNWHKNTipKUrwtHHw7DFA4XVJw4wNTi9iIfH8
        AJn5EcoO4QlkyiEaUWTbfwQ=
        -----END PRIVATE KEY-----
        """
}
