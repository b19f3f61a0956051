import Foundation
import Testing
import VPNProvCrypto
import VPNProvSupport
import VPNProvTestFixtures

/// The digests behind state digests, render-cache digests and name-based UUIDs: FIPS 180 test
/// vectors, and the same answers from many threads at once (the method is fetched once and shared).
@Suite(.temporaries) struct DigestTests {
    static let abc = Array("abc".utf8)

    func hex(_ bytes: [UInt8]) -> String { hexString(bytes).lowercased() }

    @Test func knownAnswers() {
        #expect(hex(Digest.sha1(Self.abc)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(Digest.sha256(Self.abc)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(Digest.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            hex(Digest.sha384(Self.abc))
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7")
    }

    /// The streamed digest equals the one-shot digest however the data is cut, and FIPS 180's
    /// million-a vector fed in uneven pieces.
    @Test func streamedSHA256MatchesOneShot() {
        let data = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for cuts in [[], [0], [1], [63, 64, 65], [4_999, 5_000], [9_999]] {
            let stream = Digest.SHA256Stream()
            var start = 0
            for cut in cuts + [data.count] {
                stream.update(Array(data[start..<cut]))
                start = cut
            }
            #expect(stream.finish() == Digest.sha256(data), "cuts \(cuts)")
        }
        let million = Digest.SHA256Stream()
        for size in [1, 999, 100_000, 899_000] { million.update(Array(repeating: 0x61, count: size)) }
        #expect(hex(million.finish()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(hex(Digest.SHA256Stream().finish()) == hex(Digest.sha256([])))
    }

    @Test func sameAnswersFromManyThreads() {
        let expected = Digest.sha256(Array(repeating: 0x61, count: 1_000_000))
        // The digests run side by side; only the answers are written under a lock.
        let results = Locked([Bool](repeating: false, count: 64))
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let same =
                Digest.sha256(Array(repeating: 0x61, count: 1_000_000)) == expected
                && hexString(Digest.sha1(Self.abc)).lowercased() == "a9993e364706816aba3e25717850c26c9cd0d89d"
            results.withLock { $0[i] = same }
        }
        #expect(results.value.allSatisfy { $0 })
        #expect(hex(expected) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
