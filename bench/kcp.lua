-- The Wireshark Lua dissector a game team writes by hand for its game protocol over KCP, for
-- the timing comparison with framedump: KCP (ikcp.c, message mode) over UDP port 8100, game
-- frames [u32 BE total length][u16 BE id][body] inside, bodies as bench/game.lua dissects them.
-- A datagram holds one or more KCP segments, each
--   [u32le conv][u8 cmd][u8 frg][u16le wnd][u32le ts][u32le sn][u32le una][u32le len][len bytes]
-- cmd 81 PUSH (data), 82 ACK, 83 WASK (window probe), 84 WINS (window size answer). A message
-- longer than the mss is cut into PUSH segments whose frg counts down to 0; those are put back
-- together (per conv and direction, by sn) when the last one arrives. A PUSH whose sn was
-- already seen in an earlier packet is marked as a retransmission and its data not dissected
-- again (as TCP does). A PUSH with frg 0 that is not the end of a fragmented message holds one
-- or more whole game frames (several frames in one ikcp_send).
-- Load it alone (it declares the "game" protocol as bench/game.lua does):
-- tshark -r kcp.pcap -X lua_script:bench/kcp.lua -V
local kcp = Proto("kcp", "KCP")
local game = Proto("game", "Game")

local cmds = { [81] = "PUSH", [82] = "ACK", [83] = "WASK", [84] = "WINS" }
local K = {
    conv = ProtoField.uint32("kcp.conv", "Conv", base.HEX),
    cmd = ProtoField.uint8("kcp.cmd", "Cmd", base.DEC, cmds),
    frg = ProtoField.uint8("kcp.frg", "Frg"),
    wnd = ProtoField.uint16("kcp.wnd", "Wnd"),
    ts = ProtoField.uint32("kcp.ts", "Ts"),
    sn = ProtoField.uint32("kcp.sn", "Sn"),
    una = ProtoField.uint32("kcp.una", "Una"),
    len = ProtoField.uint32("kcp.len", "Len"),
    data = ProtoField.bytes("kcp.data", "Data"),
    retrans = ProtoField.framenum("kcp.retransmission_of", "Retransmission of the segment first seen in frame"),
    reassembled = ProtoField.uint32("kcp.reassembled_length", "Reassembled message length"),
}
kcp.fields = { K.conv, K.cmd, K.frg, K.wnd, K.ts, K.sn, K.una, K.len, K.data, K.retrans, K.reassembled }
local e_short = ProtoExpert.new("kcp.short", "Datagram ends inside a KCP segment", expert.group.MALFORMED, expert.severity.ERROR)
local e_frame = ProtoExpert.new("kcp.bad_frame", "Game frame does not fit the KCP message", expert.group.MALFORMED, expert.severity.ERROR)
local e_missing = ProtoExpert.new("kcp.missing_fragment", "Fragments of this message are missing", expert.group.SEQUENCE, expert.severity.WARN)
kcp.experts = { e_short, e_frame, e_missing }

local F = {
    length = ProtoField.uint32("game.length", "Length"),
    id = ProtoField.uint16("game.id", "Message id"),
    u8 = ProtoField.uint8("game.u8", "Uint8"),
    u16 = ProtoField.uint16("game.u16", "Uint16"),
    u32 = ProtoField.uint32("game.u32", "Uint32"),
    i32 = ProtoField.int32("game.i32", "Int32"),
    u64 = ProtoField.uint64("game.u64", "Uint64"),
    str = ProtoField.string("game.string", "String"),
}
game.fields = { F.length, F.id, F.u8, F.u16, F.u32, F.i32, F.u64, F.str }

-- Field layouts per direction and id, as the server team's document gives them (bench/game.lua).
local messages = {
    c2s = { [20001] = { { "u8", "SceneId" }, { "u32", "Line" }, { "str", "message" } },
            [10002] = { { "u64", "ClientTime" } } },
    s2c = { [20001] = { { "u8", "Res" }, { "u32", "SceneId" }, { "u8", "Pos" }, { "u8", "Status" },
                        { "u8", "Type" }, { "u32", "DefaultCombat" }, { "str", "message" } },
            [30005] = { { "i32", "Hp" }, { "u16", "Level" }, { "str", "name" } } },
}
local names = { c2s = { [20001] = "Cs_20001", [10002] = "Cs_10002" },
                s2c = { [20001] = "SC_20001", [30005] = "Sc_30005" } }
local widths = { u8 = 1, u16 = 2, u32 = 4, i32 = 4, u64 = 8 }
local PORT = 8100
local HEADER = 24

-- One game frame of `len` bytes at off (the header and body as bench/game.lua's dissect_one).
local function dissect_frame(tvb, off, len, tree, dir)
    local t = tree:add(game, tvb(off, len))
    t:add(F.length, tvb(off, 4))
    t:add(F.id, tvb(off + 4, 2))
    local id = tvb(off + 4, 2):uint()
    local name = names[dir][id] or ("id " .. id)
    t:append_text(", " .. name)
    local layout = messages[dir][id]
    if not layout then return name end
    local p = off + 6
    for _, f in ipairs(layout) do
        local kind, fname = f[1], f[2]
        if kind == "str" then
            local n = tvb(p, 2):uint()
            t:add(F.str, tvb(p + 2, n)):set_text(fname .. ": " .. tvb(p + 2, n):string(ENC_UTF_8))
            p = p + 2 + n
        else
            local w = widths[kind]
            t:add(F[kind], tvb(p, w)):set_text(fname .. ": " .. tostring(kind == "u64" and tvb(p, w):uint64() or
                                                                        kind == "i32" and tvb(p, w):int() or tvb(p, w):uint()))
            p = p + w
        end
    end
    return name
end

-- The game frames filling a KCP message (`len` bytes at off of tvb).
local function dissect_message(tvb, off, len, tree, dir, seen)
    local stop = off + len
    while off < stop do
        local n = stop - off >= 6 and tvb(off, 4):uint() or 0
        if n < 6 or n > stop - off then
            tree:add_proto_expert_info(e_frame)
            return
        end
        seen[#seen + 1] = dissect_frame(tvb, off, n, tree, dir)
        off = off + n
    end
end

-- Per conv and direction ("conv..dir"): first[sn], the frame each PUSH sn was first seen in;
-- frg[sn], its frg; and for fragmented messages: bytes[sn], the data kept until the message is
-- whole, from[last], the lowest sn seen of the message ending at sn `last`, head[sn] = last for
-- that lowest sn. ikcp marks no segment as a message's first: a message starts right after
-- the previous one's last segment (frg 0), or at sn 0.
local conversations = {}

local function conversation(key)
    local c = conversations[key]
    if not c then
        c = { first = {}, frg = {}, bytes = {}, from = {}, head = {} }
        conversations[key] = c
    end
    return c
end

-- If every segment of the message ending at sn `last` is there, put it back together and
-- dissect its game frames under `st` (the segment that completed it, whichever came last).
local function complete(c, last, st, dir, seen)
    local from = c.from[last]
    if not from or (from > 0 and c.frg[from - 1] ~= 0) then return end
    local bytes = c.bytes
    for i = from, last do
        if not bytes[i] then return end
    end
    local whole = ByteArray.new()
    for i = from, last do whole:append(bytes[i]) end
    local rtvb = whole:tvb("Reassembled KCP message")
    st:add(K.reassembled, whole:len()):set_generated()
    dissect_message(rtvb, 0, whole:len(), st, dir, seen)
end

function kcp.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    if len < HEADER then return 0 end
    local dir = pinfo.dst_port == PORT and "c2s" or "s2c"
    local num = pinfo.number
    local off = 0
    local info, seen = {}, {}
    while off < len do
        if len - off < HEADER then
            tree:add_proto_expert_info(e_short)
            break
        end
        local dlen = tvb(off + 20, 4):le_uint()
        if len - off - HEADER < dlen then
            tree:add_proto_expert_info(e_short)
            break
        end
        local st = tree:add(kcp, tvb(off, HEADER + dlen))
        local conv = tvb(off, 4):le_uint()
        local cmd = tvb(off + 4, 1):uint()
        local frg = tvb(off + 5, 1):uint()
        local sn = tvb(off + 12, 4):le_uint()
        st:add_le(K.conv, tvb(off, 4))
        st:add(K.cmd, tvb(off + 4, 1))
        st:add(K.frg, tvb(off + 5, 1))
        st:add_le(K.wnd, tvb(off + 6, 2))
        st:add_le(K.ts, tvb(off + 8, 4))
        st:add_le(K.sn, tvb(off + 12, 4))
        st:add_le(K.una, tvb(off + 16, 4))
        st:add_le(K.len, tvb(off + 20, 4))
        local cname = cmds[cmd] or tostring(cmd)
        st:append_text(", " .. cname .. " sn " .. sn .. (frg > 0 and (" frg " .. frg) or ""))
        info[#info + 1] = cname .. " " .. sn
        if cmd == 81 and dlen > 0 then
            local c = conversation(conv .. dir)
            local first = c.first[sn]
            if not first then
                c.first[sn] = num
                c.frg[sn] = frg
                first = num
            end
            local data = tvb(off + HEADER, dlen)
            if first ~= num then
                st:add(K.retrans, first)
                info[#info] = info[#info] .. " (retransmission)"
                st:add(K.data, data)
            else
                local n = dlen >= 6 and tvb(off + HEADER, 4):uint() or 0
                if frg > 0 or c.from[sn] then
                    -- A fragment (or the last segment of a message with fragments seen):
                    -- kept until every segment of the message is there.
                    c.bytes[sn] = data:bytes()
                    local last = sn + frg
                    local from = c.from[last]
                    if not from or from > sn then
                        if from then c.head[from] = nil end
                        c.from[last] = sn
                        c.head[sn] = last
                    end
                    st:add(K.data, data)
                    complete(c, last, st, dir, seen)
                elseif n >= 6 and n <= dlen then
                    dissect_message(tvb, off + HEADER, dlen, st, dir, seen)
                else
                    -- frg 0 but not a game frame: the end of a message whose other segments
                    -- come later (their first transmissions were lost before the capture).
                    c.bytes[sn] = data:bytes()
                    st:add(K.data, data)
                end
                -- A message waiting for this one's end to know where it starts.
                if frg == 0 and c.head[sn + 1] then complete(c, c.head[sn + 1], st, dir, seen) end
            end
        end
        off = off + HEADER + dlen
    end
    pinfo.cols.protocol = "KCP"
    local s = table.concat(info, ", ")
    if #seen > 0 then s = s .. " [" .. table.concat(seen, ", ") .. "]" end
    pinfo.cols.info = s
    return len
end

DissectorTable.get("udp.port"):add(PORT, kcp)
