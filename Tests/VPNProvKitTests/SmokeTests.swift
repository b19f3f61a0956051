import Testing

@testable import VPNProvCLI
@testable import VPNProvEngine
@testable import VPNProvModel
@testable import VPNProvOutputTree
@testable import VPNProvPKI
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport
@testable import VPNProvTemplates
@testable import VPNProvTestSupport

@Test func serviceOrderIsTheSpecTableOrder() {
    #expect(
        Service.allCases.sorted() == [
            .ikev2Cert, .ikev2EAP, .ikev2PSK, .ikev2PSKEAP, .ipsecXauthPSK, .ipsecXauthHybrid,
        ])
    #expect(IPAddressText.format(IPAddressText.parse("2001:db8:0::1")!) == "2001:db8::1")
}
