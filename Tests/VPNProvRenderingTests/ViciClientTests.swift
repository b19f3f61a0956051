import Foundation
import Testing
import VPNProvTemplates
import VPNProvTestFixtures

/// The role's vici client (deploy/roles/vpnprov_node/module_utils/vpnprov_vici.py, as vpnprov writes it) run by
/// python3 against one end of a socket pair, whose other end plays charon: what it reads from the socket is
/// bounded by vici's own packet limit (strongSwan's VICI_MESSAGE_SIZE_MAX, 512 KiB, in vici_socket.h), and a
/// length prefix beyond it is refused at once with the limit named, instead of reading (or waiting for) what it
/// announces.
@Suite(.temporaries) struct ViciClientTests {
    /// What the client's `_receive` makes of the bytes `peer` (a Python bytes expression) sends and then holds
    /// the connection open: `ok <kind> <decoded message as JSON>`, or `refused <ViciError's text>`, or the
    /// name of another exception (a read that waited for bytes that never came ends in a 2 s timeout).
    static func receive(_ peer: String) throws -> String {
        let client = try #require(BuiltinDeployFiles.files["roles/vpnprov_node/module_utils/vpnprov_vici.py"])
        let dir = try temporaryDirectory("vici")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/vpnprov_vici.py"
        try client.write(toFile: path, atomically: true, encoding: .utf8)
        let driver = """
            import json, socket, struct, sys, types
            vici = types.ModuleType("vpnprov_vici")
            exec(compile(open(sys.argv[1]).read(), "vpnprov_vici", "exec"), vici.__dict__)
            ours, charon = socket.socketpair()
            ours.settimeout(2)
            client = object.__new__(vici.Vici)
            client.sock = ours
            charon.sendall(\(peer))
            try:
                kind, _, body = client._receive()
                print("ok", kind, json.dumps(vici.Vici.decode(body), sort_keys=True))
            except vici.ViciError as error:
                print("refused", error)
            except Exception as error:
                print(type(error).__name__)
            """
        let run = try runTool(["/usr/bin/python3", "-c", driver, path])
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.needs(.python3)) func readsAPacketWithinVicisLimit() throws {
        // CMD_RESPONSE (1) holding one key-value: success = yes.
        let answer = try Self.receive(#"struct.pack("!I", 15) + b"\x01\x03\x07success\x00\x03yes""#)
        #expect(answer == #"ok 1 {"success": "yes"}"#)
    }

    @Test(.needs(.python3)) func refusesALengthBeyondVicisLimitWithoutReadingIt() throws {
        for length in [512 * 1024 + 1, 0xFFFF_FFFF] {
            let answer = try Self.receive("struct.pack(\"!I\", \(length)) + b\"\\x01\"")
            #expect(
                answer == "refused the vici socket announced a packet of \(length) bytes, more than vici's limit"
                    + " of 524288: not read")
        }
    }

    @Test(.needs(.python3)) func refusesAnEmptyPacket() throws {
        let answer = try Self.receive(#"struct.pack("!I", 0)"#)
        #expect(answer == "refused the vici socket sent an empty packet")
    }
}
