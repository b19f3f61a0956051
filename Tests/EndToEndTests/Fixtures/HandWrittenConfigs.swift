import Foundation
import VPNProvTestHarness

/// Hand-written server and client configurations that prove the harness before generated ones exist.
/// The lead may drop these once vpnprov's own output is used.
enum HandWritten {
    static let serverID = "vpn.example.com"
    static let eapUser = "alice"
    static let eapPassword = "alice pw # \"quoted\""
    static let pskClientID = "carol@example.com"
    static let psk = "psk with # and \"quotes\""
    static let certClientID = "dave@example.com"
    static let groupName = "vpngroup"
    static let groupPSK = "group secret"
    static let xauthUser = "bob"
    static let xauthPassword = "bob pw"
    static let p12Password = "p12 pass"

    /// swanctl string literal: always quoted, `\` and `"` escaped (docs/formats.md, "swanctl").
    static func quoted(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// What a node generated with the IKEv1 group service must ship in strongswan.d.
    static let aggressiveModeSettings = """
        charon {
          i_dont_care_about_security_and_use_aggressive_mode_psk = yes
        }

        """

    /// A server offering IKEv2 client-cert, IKEv2 EAP-MSCHAPv2, IKEv2 PSK and IKEv1 XAuth-PSK aggressive mode,
    /// in the order that lets all of them connect (docs/decisions.md, "Connection order": client-cert connection
    /// first).
    static func serverConf() -> String {
        """
        connections {
          ikev2-cert {
            version = 2
            pools = pool-v4, pool-v6
            send_cert = always
            local {
              auth = pubkey
              certs = server.pem
              id = \(serverID)
            }
            remote {
              auth = pubkey
              cacerts = ca.pem
              id = "*@example.com"
            }
            children {
              net {
                local_ts = 0.0.0.0/0, ::/0
              }
            }
          }
          ikev2-eap {
            version = 2
            pools = pool-v4, pool-v6
            send_cert = always
            send_certreq = no
            local {
              auth = pubkey
              certs = server.pem
              id = \(serverID)
            }
            remote {
              auth = eap-mschapv2
              eap_id = %any
            }
            children {
              net {
                local_ts = 0.0.0.0/0, ::/0
              }
            }
          }
          ikev2-psk {
            version = 2
            pools = pool-v4
            local {
              auth = psk
              id = \(serverID)
            }
            remote {
              auth = psk
              id = %any
            }
            children {
              net {
                local_ts = 0.0.0.0/0
              }
            }
          }
          ikev1-xauth-psk-aggr {
            version = 1
            aggressive = yes
            pools = pool-v4
            proposals = aes256-sha256-modp2048, aes256-sha1-modp2048
            local {
              auth = psk
              id = \(serverID)
            }
            remote-psk {
              auth = psk
              id = keyid:\(groupName)
            }
            remote-xauth {
              auth = xauth
            }
            children {
              net {
                local_ts = 0.0.0.0/0
                esp_proposals = aes256-sha256, aes256-sha1
              }
            }
          }
        }
        pools {
          pool-v4 {
            addrs = 10.99.0.0/24
          }
          pool-v6 {
            addrs = fd00:99::/112
          }
        }
        secrets {
          eap-alice {
            id = \(eapUser)
            secret = \(quoted(eapPassword))
          }
          xauth-bob {
            id = \(xauthUser)
            secret = \(quoted(xauthPassword))
          }
          ike-psk {
            id-1 = \(serverID)
            id-2 = %any
            secret = \(quoted(psk))
          }
          ike-group {
            id = keyid:\(groupName)
            secret = \(quoted(groupPSK))
          }
        }

        """
    }

    static func serverFiles(pki: StrongSwanPKI, serverCert: (cert: String, key: String)) throws -> [String: Data] {
        [
            "x509/server.pem": try SwanctlDirectory.contents(of: serverCert.cert),
            "private/server.key": try SwanctlDirectory.contents(of: serverCert.key),
            "x509ca/ca.pem": try SwanctlDirectory.contents(of: pki.caCert),
        ]
    }

    static func eapClientConf(password: String = eapPassword) -> String {
        """
        connections {
          home {
            version = 2
            remote_addrs = 192.0.2.1
            vips = 0.0.0.0, ::
            local {
              auth = eap-mschapv2
              eap_id = \(eapUser)
              id = \(eapUser)
            }
            remote {
              auth = pubkey
              id = \(serverID)
            }
            children {
              home {
                remote_ts = 0.0.0.0/0, ::/0
              }
            }
          }
        }
        secrets {
          eap-alice {
            id = \(eapUser)
            secret = \(quoted(password))
          }
        }

        """
    }

    static func pskClientConf(psk: String = psk) -> String {
        """
        connections {
          home {
            version = 2
            remote_addrs = 192.0.2.1
            vips = 0.0.0.0
            local {
              auth = psk
              id = \(pskClientID)
            }
            remote {
              auth = psk
              id = \(serverID)
            }
            children {
              home {
                remote_ts = 0.0.0.0/0
              }
            }
          }
        }
        secrets {
          ike-psk {
            id-1 = \(serverID)
            id-2 = \(pskClientID)
            secret = \(quoted(psk))
          }
        }

        """
    }

    static func certClientConf() -> String {
        """
        connections {
          home {
            version = 2
            remote_addrs = 192.0.2.1
            vips = 0.0.0.0
            local {
              auth = pubkey
              id = \(certClientID)
            }
            remote {
              auth = pubkey
              id = \(serverID)
            }
            children {
              home {
                remote_ts = 0.0.0.0/0
              }
            }
          }
        }
        secrets {
          pkcs12-dave {
            file = dave.p12
            secret = \(quoted(p12Password))
          }
        }

        """
    }

    /// iOS "Cisco IPSec" with a group name: aggressive mode, ID_KEY_ID group, PSK, then XAuth.
    static func ikev1ClientConf() -> String {
        """
        connections {
          home {
            version = 1
            aggressive = yes
            remote_addrs = 192.0.2.1
            vips = 0.0.0.0
            proposals = aes256-sha256-modp2048
            local {
              auth = psk
              id = keyid:\(groupName)
            }
            local-xauth {
              auth = xauth
              xauth_id = \(xauthUser)
            }
            remote {
              auth = psk
              id = \(serverID)
            }
            children {
              home {
                remote_ts = 0.0.0.0/0
                esp_proposals = aes256-sha256
              }
            }
          }
        }
        secrets {
          xauth-bob {
            id = \(xauthUser)
            secret = \(quoted(xauthPassword))
          }
          ike-group {
            id-1 = keyid:\(groupName)
            id-2 = \(serverID)
            secret = \(quoted(groupPSK))
          }
        }

        """
    }
}
