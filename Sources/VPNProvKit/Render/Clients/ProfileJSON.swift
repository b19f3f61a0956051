/// The `.sswan` JSON exactly as `JSONEncoder` with `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]`
/// writes `AndroidProfileRenderer.Profile` (two-space indentation, `" : "`, keys in byte order,
/// absent optionals left out), without the encoder's cost: a fleet renders one per user, node and
/// service. PropertyListTests compare it with JSONEncoder.
extension AndroidProfileRenderer.Profile {
    func prettyJSON() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        var w = JSONObjectWriter(indent: 0)
        w.open(&out)
        if let v = espProposal { w.field("esp-proposal", v, &out) }
        if let v = ikeProposal { w.field("ike-proposal", v, &out) }
        w.object("local", &out) { l, out in
            if let v = local.eapID { l.field("eap_id", v, &out) }
            if let v = local.id { l.field("id", v, &out) }
            if let v = local.p12 { l.field("p12", v, &out) }
            if let v = local.sharedSecret { l.field("shared_secret", v, &out) }
        }
        w.field("name", name, &out)
        w.object("remote", &out) { r, out in
            r.field("addr", remote.addr, &out)
            r.field("cert", remote.cert, &out)
            r.field("id", remote.id, &out)
        }
        w.field("type", type, &out)
        w.field("uuid", uuid, &out)
        w.close(&out)
        out.append(0x0A)
        return out
    }
}

struct JSONObjectWriter {
    var indent: Int
    var count = 0

    func spaces(_ n: Int, _ out: inout [UInt8]) {
        for _ in 0..<n { out.append(0x20) }
    }

    mutating func open(_ out: inout [UInt8]) { out.append(UInt8(ascii: "{")) }

    func close(_ out: inout [UInt8]) {
        // JSONEncoder writes an empty object as "{", two newlines, the indentation and "}".
        if count == 0 { out.append(0x0A) }
        out.append(0x0A)
        spaces(indent, &out)
        out.append(UInt8(ascii: "}"))
    }

    private mutating func key(_ name: String, _ out: inout [UInt8]) {
        if count > 0 { out.append(UInt8(ascii: ",")) }
        out.append(0x0A)
        spaces(indent + 2, &out)
        JSONObjectWriter.string(name, &out)
        out += [0x20, UInt8(ascii: ":"), 0x20]
        count += 1
    }

    mutating func field(_ name: String, _ value: String, _ out: inout [UInt8]) {
        key(name, &out)
        JSONObjectWriter.string(value, &out)
    }

    mutating func object(_ name: String, _ out: inout [UInt8], _ body: (inout JSONObjectWriter, inout [UInt8]) -> Void) {
        key(name, &out)
        var inner = JSONObjectWriter(indent: indent + 2)
        inner.open(&out)
        body(&inner, &out)
        inner.close(&out)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// JSONEncoder's string escaping without slash escaping.
    static func string(_ text: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        let plain = text.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x00..<0x20:
                out += Array("\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
