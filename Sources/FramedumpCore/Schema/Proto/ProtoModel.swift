/// What a `.proto` file declares, in the shape of protobuf's own `FileDescriptorProto`, so the
/// `.proto` text parser and a compiled descriptor set (`protoc -o x.desc`) give the same
/// value, and tests can compare the two.

/// Field types, numbered as in `google/protobuf/descriptor.proto` (`FieldDescriptorProto.Type`).
public enum ProtoType: Int, Sendable, Equatable {
    case double = 1, float, int64, uint64, int32, fixed64, fixed32, bool, string, group, message, bytes,
         uint32, enumeration, sfixed32, sfixed64, sint32, sint64

    static let scalars: [String: ProtoType] = [
        "double": .double, "float": .float, "int64": .int64, "uint64": .uint64, "int32": .int32,
        "fixed64": .fixed64, "fixed32": .fixed32, "bool": .bool, "string": .string, "bytes": .bytes,
        "uint32": .uint32, "sfixed32": .sfixed32, "sfixed64": .sfixed64, "sint32": .sint32, "sint64": .sint64,
    ]

    /// The wire type a single value of this type is written with.
    var wireType: UInt8 {
        switch self {
        case .double, .fixed64, .sfixed64: return 1
        case .float, .fixed32, .sfixed32: return 5
        case .string, .bytes, .message: return 2
        case .group: return 3
        default: return 0
        }
    }

    /// Scalars that may be packed (every numeric type, bool and enums).
    var packable: Bool { wireType == 0 || wireType == 1 || wireType == 5 }

    var name: String {
        switch self {
        case .enumeration: return "enum"
        default: return String(describing: self)
        }
    }
}

public enum ProtoLabel: Int, Sendable, Equatable { case optional = 1, required, repeated }

public struct ProtoFieldModel: Sendable, Equatable {
    public var name: String
    public var number: Int32
    public var label: ProtoLabel
    public var type: ProtoType
    /// Fully qualified with a leading dot (`.pkg.Msg`) once resolved; as written before.
    public var typeName: String = ""
    public var defaultValue: String?
    public var oneofIndex: Int32?
    public var jsonName: String
    /// `[packed = ...]` when written; nil when not.
    public var packed: Bool?
    public var proto3Optional = false
}

public struct ProtoEnumValueModel: Sendable, Equatable {
    public var name: String
    public var number: Int32
}

public struct ProtoEnumModel: Sendable, Equatable {
    public var name: String
    public var values: [ProtoEnumValueModel] = []
}

public struct ProtoMessageModel: Sendable, Equatable {
    public var name: String
    public var fields: [ProtoFieldModel] = []
    public var nested: [ProtoMessageModel] = []
    public var enums: [ProtoEnumModel] = []
    public var oneofs: [String] = []
    public var isMapEntry = false
    /// Reserved ranges as `[start, end)`, like the descriptor.
    public var reservedRanges: [ProtoRange] = []
    public var reservedNames: [String] = []
    public var extensionRanges: [ProtoRange] = []
}

public struct ProtoRange: Sendable, Equatable {
    public var start: Int32
    public var end: Int32
}

public struct ProtoFileModel: Sendable, Equatable {
    public var name: String
    public var package: String = ""
    /// "proto2" or "proto3".
    public var syntax: String = "proto2"
    public var dependencies: [String] = []
    public var publicDependencies: [Int32] = []
    public var messages: [ProtoMessageModel] = []
    public var enums: [ProtoEnumModel] = []
    /// `service` blocks: what gRPC reads (a call's request and response types by its path).
    public var services: [ProtoServiceModel] = []
}

/// `service Chat { rpc Send (Req) returns (stream Resp); }`, as `ServiceDescriptorProto`.
public struct ProtoServiceModel: Sendable, Equatable {
    public var name: String
    public var methods: [ProtoMethodModel] = []
}

public struct ProtoMethodModel: Sendable, Equatable {
    public var name: String
    /// Fully qualified with a leading dot once resolved; as written before.
    public var inputType: String
    public var outputType: String
    public var clientStreaming = false
    public var serverStreaming = false
}

/// protoc's default JSON name: underscores removed, the letter after each one capitalised.
func protoJSONName(_ name: String) -> String {
    var out = ""
    var upper = false
    for c in name {
        if c == "_" { upper = true; continue }
        if upper { out += c.uppercased(); upper = false } else { out.append(c) }
    }
    return out
}
