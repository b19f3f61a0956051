import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Where a command writes: standard output and standard error, injected so tests run commands
/// in-process and read what they printed.
package struct Console: Sendable {
    package enum Stream: Sendable {
        case output
        case error
    }

    private let sink: @Sendable (Stream, String) -> Void
    /// Progress messages go to stderr only when it is a terminal.
    var errorIsTerminal: Bool

    package init(errorIsTerminal: Bool = false, sink: @escaping @Sendable (Stream, String) -> Void) {
        self.sink = sink
        self.errorIsTerminal = errorIsTerminal
    }

    /// Writes `text` as is (no newline added) to standard output.
    package func out(_ text: String) { sink(.output, text) }
    /// Writes `text` as is (no newline added) to standard error.
    package func err(_ text: String) { sink(.error, text) }

    /// `TextOutputStream`s for `print(..., to: &stream)`.
    package var standardOutput: ConsoleStream { ConsoleStream(console: self, stream: .output) }
    package var standardError: ConsoleStream { ConsoleStream(console: self, stream: .error) }

    /// The process's real streams.
    package static var standard: Console {
        Console(errorIsTerminal: isatty(2) == 1) { stream, text in
            let handle = stream == .output ? FileHandle.standardOutput : FileHandle.standardError
            handle.write(Data(text.utf8))
        }
    }
}

/// A `TextOutputStream` writing to one of a console's streams.
package struct ConsoleStream: TextOutputStream, Sendable {
    let console: Console
    let stream: Console.Stream
    package mutating func write(_ string: String) {
        stream == .output ? console.out(string) : console.err(string)
    }
}
