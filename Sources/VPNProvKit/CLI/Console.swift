import Foundation

/// Where a command writes: standard output and standard error, injected so tests run commands
/// in-process and read what they printed.
public struct Console: Sendable {
    public enum Stream: Sendable {
        case output
        case error
    }

    private let sink: @Sendable (Stream, String) -> Void
    /// Progress messages go to stderr only when it is a terminal.
    public var errorIsTerminal: Bool

    public init(errorIsTerminal: Bool = false, sink: @escaping @Sendable (Stream, String) -> Void) {
        self.sink = sink
        self.errorIsTerminal = errorIsTerminal
    }

    /// Writes `text` as is (no newline added) to standard output.
    public func out(_ text: String) { sink(.output, text) }
    /// Writes `text` as is (no newline added) to standard error.
    public func err(_ text: String) { sink(.error, text) }

    /// `TextOutputStream`s for `print(..., to: &stream)`.
    public var standardOutput: ConsoleStream { ConsoleStream(console: self, stream: .output) }
    public var standardError: ConsoleStream { ConsoleStream(console: self, stream: .error) }

    /// The process's real streams.
    public static var standard: Console {
        Console(errorIsTerminal: isatty(2) == 1) { stream, text in
            let handle = stream == .output ? FileHandle.standardOutput : FileHandle.standardError
            handle.write(Data(text.utf8))
        }
    }

    /// A console that records everything, for tests.
    public static func capturing() -> (Console, ConsoleCapture) {
        let capture = ConsoleCapture()
        return (Console { stream, text in capture.append(stream, text) }, capture)
    }
}

/// A `TextOutputStream` writing to one of a console's streams.
public struct ConsoleStream: TextOutputStream, Sendable {
    let console: Console
    let stream: Console.Stream
    public mutating func write(_ string: String) {
        stream == .output ? console.out(string) : console.err(string)
    }
}

/// What a capturing console received.
public final class ConsoleCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var out = ""
    private var err = ""

    public init() {}

    func append(_ stream: Console.Stream, _ text: String) {
        lock.lock()
        defer { lock.unlock() }
        if stream == .output { out += text } else { err += text }
    }

    public var stdout: String {
        lock.lock()
        defer { lock.unlock() }
        return out
    }

    public var stderr: String {
        lock.lock()
        defer { lock.unlock() }
        return err
    }
}
