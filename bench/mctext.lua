-- tshark glue for memcached's text protocol, for bench/run.sh: CR LF lines, a storage command's
-- or VALUE reply's line followed by the data block its word counts (word 5 for set, word 4 for
-- VALUE) and CR LF, each line (with its block) one item with the line and the block as fields.
-- Wireshark's own memcache dissector reads only the first command of a segment, so it does
-- not do this work; this does, reassembling by hand as a Lua dissector for such a protocol must:
--   tshark -r mctext.pcap -X lua_script:bench/mctext.lua -V
local p = Proto("mctextbench", "memcached text (counted blocks)")
local f_line = ProtoField.string("mctextbench.line", "line")
local f_data = ProtoField.bytes("mctextbench.data", "data")
p.fields = { f_line, f_data }
local counted = { set = 5, add = 5, replace = 5, append = 5, prepend = 5, cas = 5, VALUE = 4 }

function p.dissector(tvb, pinfo, tree)
  pinfo.cols.protocol = "MCTEXT"
  local len, offset = tvb:len(), 0
  while offset < len do
    local s = tvb:raw(offset, len - offset)
    local e = s:find("\r\n", 1, true)
    if e == nil then
      pinfo.desegment_offset = offset
      pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
      return len
    end
    local line = s:sub(1, e - 1)
    local words = {}
    for w in line:gmatch("%S+") do words[#words + 1] = w end
    local total, block = e + 1, nil
    local which = counted[words[1] or ""]
    if which and tonumber(words[which] or "") then
      block = tonumber(words[which])
      total = e + 1 + block + 2
    end
    if offset + total > len then
      pinfo.desegment_offset = offset
      pinfo.desegment_len = offset + total - len
      return len
    end
    local t = tree:add(p, tvb(offset, total))
    t:add(f_line, tvb(offset, e - 1))
    if block and block > 0 then t:add(f_data, tvb(offset + e + 1, block)) end
    offset = offset + total
  end
  return offset
end

DissectorTable.get("tcp.port"):add(11311, p)
