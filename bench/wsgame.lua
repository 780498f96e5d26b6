-- The Wireshark Lua dissector a team writes by hand today for a WebSocket text sub-protocol,
-- CMD|SEQ|JSON (Dissectors/wsgame.dissector), for the comparison in bench/run.sh: the command
-- and sequence numbers read from their digits, the message named by its command, the rest
-- handed to Wireshark's own JSON dissector.
-- tshark -r wsgame.pcap -X lua_script:bench/wsgame.lua -d tcp.port==7710,http -V
local p = Proto("wsgamebench", "WebSocket game text")
local F = {
    cmd = ProtoField.int32("wsgamebench.cmd", "Cmd"),
    seq = ProtoField.int32("wsgamebench.seq", "Seq"),
}
p.fields = { F.cmd, F.seq }
local names = { [0] = "Heartbeat", [1] = "HeartbeatAck", [1001] = "Login", [1002] = "LoginOk", [2001] = "JoinRoom",
                [2002] = "RoomState", [3001] = "Chat", [3002] = "ChatOk", [9001] = "ChatPush" }
local json = Dissector.get("json")

-- Digits (and a leading '-') from `off` to the next '|': the number and where what follows starts.
local function number(tvb, off)
    local s = off
    local n = tvb:len()
    while off < n and tvb(off, 1):uint() ~= 0x7c do off = off + 1 end
    if off >= n then return nil, s end
    return tonumber(tvb(s, off - s):string()), off + 1, s
end

function p.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "WSGAME"
    local t = tree:add(p, tvb())
    local cmd, after, s1 = number(tvb, 0)
    if not cmd then t:add_expert_info(PI_MALFORMED, PI_ERROR, "no header"); return end
    t:add(F.cmd, tvb(s1, after - s1), cmd)
    local seq, body, s2 = number(tvb, after)
    if not seq then return end
    t:add(F.seq, tvb(s2, body - s2), seq)
    local name = names[cmd] or "?"
    t:append_text(": " .. name)
    pinfo.cols.info = name
    if body < tvb:len() then json:call(tvb(body):tvb(), pinfo, t) end
end

DissectorTable.get("ws.port"):add(7710, p)
