/// A problem in a dissector file, located as `file:line:column`.
public struct DissectorError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String
    /// The offending line's text, shown under the message with a caret.
    public var sourceLine: String

    public init(file: String, line: Int, column: Int, message: String, sourceLine: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.sourceLine = sourceLine
    }

    public var description: String {
        // A whole file that cannot be read has no position in it to show.
        var s = line == 0 ? "\(file): error: \(message)" : "\(file):\(line):\(column): error: \(message)"
        if !sourceLine.isEmpty {
            s += "\n    \(sourceLine)\n    " + String(repeating: " ", count: max(0, column - 1)) + "^"
        }
        return s
    }
}
