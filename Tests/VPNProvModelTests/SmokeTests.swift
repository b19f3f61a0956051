import Testing
import VPNProvModel
import VPNProvTestFixtures

@Test func serviceOrderIsTheSpecTableOrder() {
    #expect(
        Service.allCases.sorted() == [
            .ikev2Cert, .ikev2EAP, .ikev2PSK, .ikev2PSKEAP, .ipsecXauthPSK, .ipsecXauthHybrid,
        ])
    #expect(IPAddressText.format(IPAddressText.parse("2001:db8:0::1")!) == "2001:db8::1")
}
