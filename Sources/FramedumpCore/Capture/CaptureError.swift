/// Everything that can go wrong opening or reading a capture, each with its own exit code.
public enum CaptureError: Error, CustomStringConvertible, Equatable {
    case noSuchFile(String)
    /// The file is there but cannot be opened for reading: the reason (permission denied, a folder).
    case cannotReadFile(String, String)
    /// A capture of zero bytes: not even a file header.
    case emptyFile(String)
    case notACapture(String, String)
    case truncatedCapture(String, String)
    case readFailed(String)
    /// A read error in the middle of a capture: the file (or interface) and libpcap's words.
    case readFailedIn(String, String)
    case noSuchInterface(String)
    case permissionDenied(String, String)
    case liveOpenFailed(String, String)
    case badFilter(String, String)
    case dumpOpenFailed(String, String)
    case privilegeDrop(String)
    /// A quoted glob that matched nothing, or a folder with no capture file in it.
    case noCaptureFiles(String)
    /// One file named twice among several inputs (its two names).
    case repeatedFile(String, String)
    /// `-r -` among other inputs.
    case stdinInSet

    public var description: String {
        // A path whose bytes are not UTF-8 is shown with `\xFF` escapes.
        switch self.displayed {
        case .noSuchFile(let p): return "\(p): no such file"
        case .cannotReadFile(let p, let why): return "\(p): cannot read: \(why)"
        case .emptyFile(let p): return "\(p): the capture is empty (0 bytes, not even a file header)"
        case .notACapture(let p, let why): return "\(p): not a pcap or pcapng capture (\(why))"
        case .truncatedCapture(let p, let why): return "\(p): capture is cut off mid-record (\(why))"
        case .readFailed(let why): return "read error: \(why)"
        case .readFailedIn(let p, let why): return "\(p): read error: \(why)"
        case .noSuchInterface(let i): return "\(i): no such interface (framedump -D lists them)"
        case .permissionDenied(let i, let why):
            return "\(i): permission denied: live capture needs root or CAP_NET_RAW (\(why))"
        case .liveOpenFailed(let i, let why): return "\(i): cannot capture: \(why)"
        case .badFilter(let f, let why): return "bad filter expression '\(f)': \(why)"
        case .dumpOpenFailed(let p, let why): return "\(p): cannot write capture: \(why)"
        case .privilegeDrop(let why): return "cannot drop privileges: \(why)"
        case .noCaptureFiles(let p):
            return p.contains(where: { "*?[".contains($0) }) ? "\(p): no file matches this pattern"
                : "\(p): no capture file in this folder (it reads *.pcap, *.pcapng and *.cap)"
        case .repeatedFile(let a, let b):
            return a == b ? "\(a): named twice among the inputs (each packet would be merged with itself)"
                : "\(a) and \(b) are the same file (each packet would be merged with itself)"
        case .stdinInSet: return "'-' (standard input) can only be read alone, not merged with other inputs"
        }
    }

    var displayed: CaptureError {
        switch self {
        case .noSuchFile(let p): return .noSuchFile(RawPath.display(p))
        case .notACapture(let p, let w): return .notACapture(RawPath.display(p), w)
        case .truncatedCapture(let p, let w): return .truncatedCapture(RawPath.display(p), w)
        case .readFailedIn(let p, let w): return .readFailedIn(RawPath.display(p), w)
        case .dumpOpenFailed(let p, let w): return .dumpOpenFailed(RawPath.display(p), w)
        case .noCaptureFiles(let p): return .noCaptureFiles(RawPath.display(p))
        case .repeatedFile(let a, let b): return .repeatedFile(RawPath.display(a), RawPath.display(b))
        default: return self
        }
    }

    /// Distinct exit codes so scripts can tell failures apart (2 is also used for usage errors).
    public var exitCode: Int32 {
        switch self {
        case .badFilter: return 2
        case .noSuchFile, .noCaptureFiles: return 3
        case .repeatedFile, .stdinInSet: return 2
        case .notACapture: return 4
        case .truncatedCapture, .readFailed, .readFailedIn: return 5
        case .noSuchInterface: return 6
        case .permissionDenied: return 7
        case .liveOpenFailed: return 8
        case .dumpOpenFailed: return 9
        case .privilegeDrop: return 10
        case .cannotReadFile: return 11
        case .emptyFile: return 12
        }
    }
}
