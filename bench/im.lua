-- tshark glue for the im protocol (seed 002), for bench/run.sh: the 12-byte header in Lua,
-- the body handed to Wireshark's own protobuf dissector with the type chosen by cid.
-- Run with the .proto folder as a protobuf search path:
--   tshark -r im.pcap -X lua_script:bench/im.lua \
--     -o 'uat:protobuf_search_paths:"Dissectors","TRUE"' -V
local p = Proto("imbench", "IM gateway")
local f_head = ProtoField.uint16("imbench.headLength", "headLength")
local f_ver = ProtoField.uint16("imbench.version", "version")
local f_cid = ProtoField.uint16("imbench.cid", "cid")
local f_bid = ProtoField.uint32("imbench.bid", "bid")
local f_len = ProtoField.uint16("imbench.bodyLength", "bodyLength")
p.fields = { f_head, f_ver, f_cid, f_bid, f_len }

local types = {
  [1] = "im.LoginRequest", [2] = "im.LoginAck", [3] = "im.SendRequest",
  [4] = "im.SendAck", [5] = "im.MsgPush", [7] = "im.Heartbeat",
}
local protobuf = Dissector.get("protobuf")

local function get_len(tvb, pinfo, offset)
  return tvb(offset, 2):uint() + tvb(offset + 10, 2):uint()
end

local function dissect_pdu(tvb, pinfo, tree)
  local t = tree:add(p, tvb())
  t:add(f_head, tvb(0, 2))
  t:add(f_ver, tvb(2, 2))
  t:add(f_cid, tvb(4, 2))
  t:add(f_bid, tvb(6, 4))
  t:add(f_len, tvb(10, 2))
  local cid = tvb(4, 2):uint()
  local n = tvb(10, 2):uint()
  local ty = types[cid]
  if ty and n > 0 then
    pinfo.private["pb_msg_type"] = "message," .. ty
    protobuf:call(tvb(12, n):tvb(), pinfo, t)
  end
  return tvb:len()
end

function p.dissector(tvb, pinfo, tree)
  pinfo.cols.protocol = "IM"
  dissect_tcp_pdus(tvb, tree, 12, get_len, dissect_pdu)
  return tvb:len()
end

DissectorTable.get("tcp.port"):add(9000, p)
