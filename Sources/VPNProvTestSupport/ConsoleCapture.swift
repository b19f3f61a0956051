import Synchronization
import VPNProvCLI

/// What a capturing console received.
package final class ConsoleCapture: Sendable {
    private let streams = Mutex((out: "", err: ""))

    package init() {}

    func append(_ stream: Console.Stream, _ text: String) {
        streams.withLock { if stream == .output { $0.out += text } else { $0.err += text } }
    }

    package var stdout: String { streams.withLock { $0.out } }
    package var stderr: String { streams.withLock { $0.err } }
}

extension Console {
    /// A console that records everything, for tests.
    package static func capturing() -> (Console, ConsoleCapture) {
        let capture = ConsoleCapture()
        return (Console { stream, text in capture.append(stream, text) }, capture)
    }
}
