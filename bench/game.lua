-- The Wireshark Lua dissector a game team writes by hand today, for the comparison in
-- bench/run.sh: [u32 total length][u16 id][body], strings [u16 length][UTF-8], port 8000.
-- tshark -r game.pcap -X lua_script:bench/game.lua -V
local game = Proto("game", "Game")
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

-- Field layouts per direction and id, as the server team's document gives them.
local messages = {
    c2s = { [20001] = { { "u8", "SceneId" }, { "u32", "Line" }, { "str", "message" } },
            [10002] = { { "u64", "ClientTime" } } },
    s2c = { [20001] = { { "u8", "Res" }, { "u32", "SceneId" }, { "u8", "Pos" }, { "u8", "Status" },
                        { "u8", "Type" }, { "u32", "DefaultCombat" }, { "str", "message" } },
            [30005] = { { "i32", "Hp" }, { "u16", "Level" }, { "str", "name" } } },
}
local widths = { u8 = 1, u16 = 2, u32 = 4, i32 = 4, u64 = 8 }

local function pdu_length(tvb, pinfo, offset) return tvb(offset, 4):uint() end

local function dissect_one(tvb, pinfo, tree)
    local t = tree:add(game, tvb())
    t:add(F.length, tvb(0, 4))
    t:add(F.id, tvb(4, 2))
    local layout = messages[pinfo.dst_port == 8000 and "c2s" or "s2c"][tvb(4, 2):uint()]
    if not layout then return tvb:len() end
    local off = 6
    for _, f in ipairs(layout) do
        local kind, name = f[1], f[2]
        if kind == "str" then
            local n = tvb(off, 2):uint()
            t:add(F.str, tvb(off + 2, n)):set_text(name .. ": " .. tvb(off + 2, n):string(ENC_UTF_8))
            off = off + 2 + n
        else
            local w = widths[kind]
            t:add(F[kind], tvb(off, w)):set_text(name .. ": " .. tostring(kind == "u64" and tvb(off, w):uint64() or
                                                                         kind == "i32" and tvb(off, w):int() or tvb(off, w):uint()))
            off = off + w
        end
    end
    pinfo.cols.protocol = "GAME"
    return tvb:len()
end

function game.dissector(tvb, pinfo, tree)
    dissect_tcp_pdus(tvb, tree, 6, pdu_length, dissect_one)
    return tvb:len()
end

DissectorTable.get("tcp.port"):add(8000, game)
