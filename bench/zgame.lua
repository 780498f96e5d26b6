-- The Wireshark Lua dissector a game team writes by hand for zgame, for the comparison in
-- bench/run.sh: [u8 magic 0xA7][u8 flags][u16le msgId][u32le bodyLength][body], port 7300.
-- flags 0x01: body zlib-compressed; 0x02: body XORed with 5a 17 c3 e1 (after compression, so
-- undone first); 0x04: LZ4 frame (shown, not decoded). Body fields little-endian, strings
-- [u8 length][UTF-8].
-- tshark -r zgame.pcap -X lua_script:bench/zgame.lua -V
local zgame = Proto("zgame", "ZGame")
local names = { [3] = "ChatSend", [4] = "ChatPush", [5] = "RoomState", [6] = "Heartbeat" }
local F = {
    magic = ProtoField.uint8("zgame.magic", "Magic", base.HEX),
    flags = ProtoField.uint8("zgame.flags", "Flags", base.HEX),
    zlib = ProtoField.bool("zgame.flags.zlib", "zlib-compressed", 8, nil, 0x01),
    xor = ProtoField.bool("zgame.flags.xor", "XORed", 8, nil, 0x02),
    lz4 = ProtoField.bool("zgame.flags.lz4", "LZ4 frame", 8, nil, 0x04),
    msgid = ProtoField.uint16("zgame.msgid", "Message id", base.DEC, names),
    bodylen = ProtoField.uint32("zgame.body_length", "Body length"),
    channel = ProtoField.uint32("zgame.channel", "channel"),
    from = ProtoField.uint64("zgame.from_player", "fromPlayer"),
    text = ProtoField.string("zgame.text", "text", base.UNICODE),
    sent_at = ProtoField.uint32("zgame.sent_at", "sentAt"),
    room = ProtoField.uint32("zgame.room_id", "roomId"),
    count = ProtoField.uint16("zgame.count", "count"),
    player = ProtoField.none("zgame.player", "player"),
    pid = ProtoField.uint64("zgame.player.id", "playerId"),
    name = ProtoField.string("zgame.player.name", "name", base.UNICODE),
    x = ProtoField.int16("zgame.player.x", "x"),
    y = ProtoField.int16("zgame.player.y", "y"),
    hp = ProtoField.uint8("zgame.player.hp", "hp"),
    client_time = ProtoField.uint64("zgame.client_time", "clientTime"),
}
zgame.fields = { F.magic, F.flags, F.zlib, F.xor, F.lz4, F.msgid, F.bodylen, F.channel, F.from, F.text,
                 F.sent_at, F.room, F.count, F.player, F.pid, F.name, F.x, F.y, F.hp, F.client_time }
local e_magic = ProtoExpert.new("zgame.bad_magic", "Not a zgame frame (magic is not 0xA7)", expert.group.MALFORMED, expert.severity.ERROR)
local e_inflate = ProtoExpert.new("zgame.inflate_failed", "Body does not inflate", expert.group.MALFORMED, expert.severity.ERROR)
local e_short = ProtoExpert.new("zgame.short_body", "Body ends inside a field", expert.group.MALFORMED, expert.severity.ERROR)
zgame.experts = { e_magic, e_inflate, e_short }

local HEADER = 8
local KEY = { [0] = 0x5A, 0x17, 0xC3, 0xE1 }
local bxor = bit32.bxor
-- Wireshark 4.2 added TvbRange:uncompress_zlib and deprecated :uncompress (4.0 has only that).
-- (Asking a class for a method it lacks raises an error, hence the pcall.)
local has_zlib, uncompress_zlib = pcall(function() return TvbRange.uncompress_zlib end)
local inflate = has_zlib and uncompress_zlib or TvbRange.uncompress

-- A [u8 length][UTF-8] string at off: adds it, returns the offset after it.
local function add_string(t, field, b, off)
    local n = b(off, 1):uint()
    t:add_packet_field(field, b(off + 1, n), ENC_UTF_8)
    return off + 1 + n
end

local function chat_send(b, t)
    t:add_le(F.channel, b(0, 4))
    add_string(t, F.text, b, 4)
end

local function chat_push(b, t)
    t:add_le(F.channel, b(0, 4))
    t:add_le(F.from, b(4, 8))
    local off = add_string(t, F.text, b, 12)
    t:add_le(F.sent_at, b(off, 4))
end

local function room_state(b, t)
    t:add_le(F.room, b(0, 4))
    t:add_le(F.count, b(4, 2))
    local off = 6
    for i = 1, b(4, 2):le_uint() do
        local start = off
        local p = t:add(F.player, b(off, 1))
        p:add_le(F.pid, b(off, 8))
        off = add_string(p, F.name, b, off + 8)
        p:add_le(F.x, b(off, 2))
        p:add_le(F.y, b(off + 2, 2))
        p:add_le(F.hp, b(off + 4, 1))
        off = off + 5
        p:set_len(off - start)
        p:append_text(" " .. i)
    end
end

local function heartbeat(b, t)
    t:add_le(F.client_time, b(0, 8))
end

local bodies = { [3] = chat_send, [4] = chat_push, [5] = room_state, [6] = heartbeat }

-- One whole frame at off (bodyLength bytes of body present).
local function dissect_frame(tvb, pinfo, tree, off, blen)
    local t = tree:add(zgame, tvb(off, HEADER + blen))
    t:add(F.magic, tvb(off, 1))
    local flags = tvb(off + 1, 1):uint()
    local ft = t:add(F.flags, tvb(off + 1, 1))
    ft:add(F.zlib, tvb(off + 1, 1))
    ft:add(F.xor, tvb(off + 1, 1))
    ft:add(F.lz4, tvb(off + 1, 1))
    t:add_le(F.msgid, tvb(off + 2, 2))
    t:add_le(F.bodylen, tvb(off + 4, 4))
    local id = tvb(off + 2, 2):le_uint()
    local name = names[id] or ("id " .. id)
    t:append_text(", " .. name)
    local decode = bodies[id]
    if not decode or blen == 0 then return name end
    local b = tvb(off + HEADER, blen)
    if bit32.btest(flags, 0x02) then
        local ba = b:bytes()
        for i = 0, blen - 1 do
            ba:set_index(i, bxor(ba:get_index(i), KEY[i % 4]))
        end
        b = ba:tvb("Un-XORed body")()
    end
    if bit32.btest(flags, 0x01) then
        local r = inflate(b, "Inflated body")
        if not r then
            t:add_proto_expert_info(e_inflate)
            return name
        end
        b = r
    end
    if bit32.btest(flags, 0x04) then return name end   -- LZ4: not decoded here
    local ok = pcall(decode, b:tvb(), t)
    if not ok then t:add_proto_expert_info(e_short) end
    return name
end

function zgame.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    local off = 0
    local seen = {}
    while off < len do
        if len - off < HEADER then   -- not even a header: ask for the next segment
            pinfo.desegment_offset = off
            pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
            break
        end
        if tvb(off, 1):uint() ~= 0xA7 then
            if off == 0 then return 0 end   -- not ours (or lost sync): let TCP show it as data
            tree:add_proto_expert_info(e_magic)
            break
        end
        local blen = tvb(off + 4, 4):le_uint()
        if len - off < HEADER + blen then   -- the frame goes on in later segments
            pinfo.desegment_offset = off
            pinfo.desegment_len = HEADER + blen - (len - off)
            break
        end
        seen[#seen + 1] = dissect_frame(tvb, pinfo, tree, off, blen)
        off = off + HEADER + blen
    end
    if #seen > 0 then
        pinfo.cols.protocol = "ZGAME"
        pinfo.cols.info = table.concat(seen, ", ")
    end
    return len
end

DissectorTable.get("tcp.port"):add(7300, zgame)
