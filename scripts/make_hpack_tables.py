#!/usr/bin/env python3
"""Write Sources/FramedumpCore/HTTP2/HPACKTables.swift: RFC 7541's static table (Appendix A) and
Huffman code (Appendix B), as PyPI's hpack package carries them (`pip install hpack`), so the
tables are typed by no one. Run from the repository root:

    python3 scripts/make_hpack_tables.py
"""
import hpack.huffman_constants as huffman
from hpack.table import HeaderTable

OUT = "Sources/FramedumpCore/HTTP2/HPACKTables.swift"


def swift_string(b):
    return '"' + b.decode("ascii").replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    codes, lengths = huffman.REQUEST_CODES, huffman.REQUEST_CODES_LENGTH
    assert len(codes) == 257 and len(lengths) == 257 and len(HeaderTable.STATIC_TABLE) == 61
    lines = ["// Written by scripts/make_hpack_tables.py: RFC 7541 Appendix A and B. Do not edit.", "",
             "enum HPACKTables {",
             "    /// Appendix A: the static table, entries 1 to 61 (index 0 here is entry 1).",
             "    static let staticTable: [(name: StaticString, value: StaticString)] = ["]
    for name, value in HeaderTable.STATIC_TABLE:
        lines.append("        (%s, %s)," % (swift_string(name), swift_string(value)))
    lines += ["    ]", "",
              "    /// Appendix B: the Huffman code of each symbol 0-255 and EOS (256), and its length in bits.",
              "    static let codes: [UInt32] = ["]
    for i in range(0, 257, 8):
        lines.append("        " + " ".join("0x%x," % c for c in codes[i:i + 8]))
    lines += ["    ]", "    static let lengths: [UInt8] = ["]
    for i in range(0, 257, 16):
        lines.append("        " + " ".join("%d," % n for n in lengths[i:i + 16]))
    lines += ["    ]", "}", ""]
    open(OUT, "w").write("\n".join(lines))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
