-- The Wireshark Lua dissector a game team writes by hand today for a MessagePack-bodied
-- protocol (Wireshark has no MessagePack dissector), for the comparison in bench/run.sh:
-- [u32 body length][u16 cmd][one MessagePack value], port 7600 (Dissectors/mpgame.dissector).
-- Every type of the format; maps as subtrees labelled by their keys, arrays by index; a
-- move ([x, y, speed, facing]) named by its fields as the team's document gives them.
-- tshark -r msgpack.pcap -X lua_script:bench/msgpack.lua -V
local p = Proto("mpgamebench", "MessagePack game")
local F = {
    length = ProtoField.uint32("mpgamebench.length", "Length"),
    cmd = ProtoField.uint16("mpgamebench.cmd", "Cmd"),
    uint = ProtoField.uint64("mpgamebench.uint", "Unsigned"),
    int = ProtoField.int64("mpgamebench.int", "Signed"),
    float = ProtoField.float("mpgamebench.float", "Float32"),
    double = ProtoField.double("mpgamebench.double", "Float64"),
    bool = ProtoField.bool("mpgamebench.bool", "Bool"),
    str = ProtoField.string("mpgamebench.str", "String"),
    bytes = ProtoField.bytes("mpgamebench.bytes", "Bytes"),
    none = ProtoField.none("mpgamebench.group", "Group"),
}
p.fields = { F.length, F.cmd, F.uint, F.int, F.float, F.double, F.bool, F.str, F.bytes, F.none }
local names = { [1] = "Login", [2] = "LoginAck", [3] = "Move", [4] = "MoveAck", [5] = "Chat", [6] = "ChatPush",
                [7] = "Inventory", [8] = "Heartbeat", [9] = "InventoryReq" }
local arrays = { [3] = { "x", "y", "speed", "facing" }, [4] = { "seq", "accepted", "pos" } }

local value -- (forward)

-- A key: its text, and where the value after it starts.
local function key(tvb, off)
    local c = tvb(off, 1):uint()
    if c >= 0xa0 and c <= 0xbf then return tvb(off + 1, c - 0xa0):string(ENC_UTF_8), off + 1 + c - 0xa0 end
    if c == 0xd9 then local n = tvb(off + 1, 1):uint(); return tvb(off + 2, n):string(ENC_UTF_8), off + 2 + n end
    if c <= 0x7f then return tostring(c), off + 1 end
    if c >= 0xe0 then return tostring(c - 256), off + 1 end
    if c == 0xcd then return tostring(tvb(off + 1, 2):uint()), off + 3 end
    if c == 0xd0 then return tostring(tvb(off + 1, 1):int()), off + 2 end
    return "?", off + 1
end

local function group(tvb, tree, off, start, name, count, isMap, labels)
    local t = tree:add(F.none, tvb(start, 1)):set_text(name .. (isMap and " {" or " [") .. count .. (isMap and " fields}" or " elements]"))
    for i = 0, count - 1 do
        local n = labels and labels[i + 1] or ("[" .. i .. "]")
        if isMap then n, off = key(tvb, off) end
        off = value(tvb, t, off, n)
    end
    return off
end

local function ext(tvb, tree, off, n, name)
    local typ = tvb(off, 1):int()
    if typ == -1 and n == 4 then
        tree:add(F.uint, tvb(off + 1, 4)):set_text(name .. ": " .. os.date("!%Y-%m-%dT%H:%M:%S", tvb(off + 1, 4):uint()) .. ".000000000Z")
    elseif typ == -1 and n == 8 then
        local v = tvb(off + 1, 8):uint64()
        local secs = (v:band(UInt64(0xffffffff, 3))):tonumber()
        local nanos = (v:rshift(34)):tonumber()
        tree:add(F.uint, tvb(off + 1, 8)):set_text(name .. ": " .. os.date("!%Y-%m-%dT%H:%M:%S", secs) .. string.format(".%09dZ", nanos))
    else
        tree:add(F.bytes, tvb(off + 1, n)):set_text(name .. ": ext " .. typ .. ": " .. tostring(tvb(off + 1, n):bytes()))
    end
    return off + 1 + n
end

value = function(tvb, tree, off, name, labels)
    local c = tvb(off, 1):uint()
    if c <= 0x7f then tree:add(F.uint, tvb(off, 1)):set_text(name .. ": " .. c); return off + 1 end
    if c >= 0xe0 then tree:add(F.int, tvb(off, 1)):set_text(name .. ": " .. (c - 256)); return off + 1 end
    if c >= 0x80 and c <= 0x8f then return group(tvb, tree, off + 1, off, name, c - 0x80, true) end
    if c >= 0x90 and c <= 0x9f then return group(tvb, tree, off + 1, off, name, c - 0x90, false, labels) end
    if c >= 0xa0 and c <= 0xbf then
        local n = c - 0xa0
        tree:add(F.str, tvb(off + 1, n)):set_text(name .. ": \"" .. tvb(off + 1, n):string(ENC_UTF_8) .. "\"")
        return off + 1 + n
    end
    if c == 0xc0 then tree:add(F.none, tvb(off, 1)):set_text(name .. ": null"); return off + 1 end
    if c == 0xc2 or c == 0xc3 then tree:add(F.bool, tvb(off, 1)):set_text(name .. ": " .. tostring(c == 0xc3)); return off + 1 end
    if c >= 0xc4 and c <= 0xc6 then
        local w = ({ 1, 2, 4 })[c - 0xc3]
        local n = tvb(off + 1, w):uint()
        if n > 0 then tree:add(F.bytes, tvb(off + 1 + w, n)):set_text(name .. ": " .. n .. " bytes " .. tostring(tvb(off + 1 + w, n):bytes()))
        else tree:add(F.bytes, tvb(off, 1 + w)):set_text(name .. ": 0 bytes") end
        return off + 1 + w + n
    end
    if c >= 0xc7 and c <= 0xc9 then
        local w = ({ 1, 2, 4 })[c - 0xc6]
        return ext(tvb, tree, off + 1 + w, tvb(off + 1, w):uint(), name)
    end
    if c == 0xca then tree:add(F.float, tvb(off + 1, 4)):set_text(name .. ": " .. tvb(off + 1, 4):float()); return off + 5 end
    if c == 0xcb then tree:add(F.double, tvb(off + 1, 8)):set_text(name .. ": " .. tvb(off + 1, 8):float()); return off + 9 end
    if c >= 0xcc and c <= 0xcf then
        local w = ({ 1, 2, 4, 8 })[c - 0xcb]
        local v = w == 8 and tostring(tvb(off + 1, 8):uint64()) or tvb(off + 1, w):uint()
        tree:add(F.uint, tvb(off + 1, w)):set_text(name .. ": " .. v)
        return off + 1 + w
    end
    if c >= 0xd0 and c <= 0xd3 then
        local w = ({ 1, 2, 4, 8 })[c - 0xcf]
        local v = w == 8 and tostring(tvb(off + 1, 8):int64()) or tvb(off + 1, w):int()
        tree:add(F.int, tvb(off + 1, w)):set_text(name .. ": " .. v)
        return off + 1 + w
    end
    if c >= 0xd4 and c <= 0xd8 then return ext(tvb, tree, off + 1, ({ 1, 2, 4, 8, 16 })[c - 0xd3], name) end
    if c >= 0xd9 and c <= 0xdb then
        local w = ({ 1, 2, 4 })[c - 0xd8]
        local n = tvb(off + 1, w):uint()
        tree:add(F.str, tvb(off + 1 + w, n)):set_text(name .. ": \"" .. tvb(off + 1 + w, n):string(ENC_UTF_8) .. "\"")
        return off + 1 + w + n
    end
    if c == 0xdc or c == 0xdd then
        local w = c == 0xdc and 2 or 4
        return group(tvb, tree, off + 1 + w, off, name, tvb(off + 1, w):uint(), false, labels)
    end
    if c == 0xde or c == 0xdf then
        local w = c == 0xde and 2 or 4
        return group(tvb, tree, off + 1 + w, off, name, tvb(off + 1, w):uint(), true)
    end
    tree:add_expert_info(PI_MALFORMED, PI_ERROR, "byte 0xc1")
    return tvb:len()
end

local function pdu_length(tvb, pinfo, offset) return 6 + tvb(offset, 4):uint() end

local function dissect_one(tvb, pinfo, tree)
    local t = tree:add(p, tvb())
    t:add(F.length, tvb(0, 4))
    t:add(F.cmd, tvb(4, 2))
    local cmd = tvb(4, 2):uint()
    t:append_text(", " .. (names[cmd] or "?"))
    if tvb:len() > 6 then
        local c = tvb(6, 1):uint()
        local labels = arrays[cmd]
        if c >= 0x80 and c <= 0x8f then
            -- A map is the message: its members at the top.
            local off = 7
            for i = 1, c - 0x80 do
                local n
                n, off = key(tvb, off)
                off = value(tvb, t, off, n)
            end
        elseif labels and c >= 0x90 and c <= 0x9f then
            local off = 7
            for i = 1, c - 0x90 do off = value(tvb, t, off, labels[i] or ("[" .. (i - 1) .. "]"), cmd == 4 and i == 3 and { "x", "y" } or nil) end
        else
            value(tvb, t, 6, "body")
        end
    end
    pinfo.cols.protocol = "MPGAME"
    return tvb:len()
end

function p.dissector(tvb, pinfo, tree)
    dissect_tcp_pdus(tvb, tree, 6, pdu_length, dissect_one)
    return tvb:len()
end

DissectorTable.get("tcp.port"):add(7600, p)
