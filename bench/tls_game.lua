-- Hands TLS's decrypted data on port 8000 to game.lua's dissector, for bench/gentls.py's
-- capture: tshark's -d cannot name a Lua dissector for the tls.port table, so this adds it.
-- Load it after game.lua:
-- tshark -r OUT.pcap -o tls.keylog_file:KEYS -d tcp.port==8000,tls \
--     -X lua_script:bench/game.lua -X lua_script:bench/tls_game.lua -V
DissectorTable.get("tls.port"):add(8000, Dissector.get("game"))
