-- tshark glue for the chat protocol, for bench/run.sh: each message's length as a varint, cut
-- in Lua (a varint has no fixed header, so dissect_tcp_pdus cannot: this reassembles by hand,
-- as a Lua dissector for Netty's ProtobufVarint32FrameDecoder must), the body handed to
-- Wireshark's own protobuf dissector as chat.Envelope. Run with the .proto folder as a search path:
--   tshark -r varint.pcap -X lua_script:bench/chat.lua \
--     -o 'uat:protobuf_search_paths:"Dissectors","TRUE"' -V
local p = Proto("chatbench", "chat (varint-framed protobuf)")
local f_len = ProtoField.uint32("chatbench.length", "length")
p.fields = { f_len }
local protobuf = Dissector.get("protobuf")

-- The varint at `offset`: value and size, or nil when the bytes end inside it.
local function varint(tvb, offset)
  local v, shift = 0, 0
  for i = 0, 4 do
    if offset + i >= tvb:len() then return nil end
    local b = tvb(offset + i, 1):uint()
    v = v + bit32.lshift(bit32.band(b, 0x7f), shift)
    if b < 0x80 then return v, i + 1 end
    shift = shift + 7
  end
  return nil, -1  -- longer than a varint32
end

function p.dissector(tvb, pinfo, tree)
  pinfo.cols.protocol = "CHAT"
  local offset = 0
  while offset < tvb:len() do
    local n, size = varint(tvb, offset)
    if n == nil then
      if size == -1 then return 0 end
      pinfo.desegment_offset = offset
      pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
      return tvb:len()
    end
    if offset + size + n > tvb:len() then
      pinfo.desegment_offset = offset
      pinfo.desegment_len = offset + size + n - tvb:len()
      return tvb:len()
    end
    local t = tree:add(p, tvb(offset, size + n))
    t:add(f_len, tvb(offset, size), n)
    if n > 0 then
      pinfo.private["pb_msg_type"] = "message,chat.Envelope"
      protobuf:call(tvb(offset + size, n):tvb(), pinfo, t)
    end
    offset = offset + size + n
  end
  return offset
end

DissectorTable.get("tcp.port"):add(7500, p)
