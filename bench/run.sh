#!/usr/bin/env bash
# The speed comparison: framedump (release build) against tshark with a hand-written Lua
# dissector on the same synthetic capture, plus the libpcap floor and peak memory at several
# capture sizes. Whole-process wall time and peak RSS via /usr/bin/time, median of RUNS runs.
# Everything it needs is in this folder: floor.c (the floor), gengame.py and genws.py (the
# captures), game.lua (the Lua dissector), genz.py, zgame.lua and zgame-bench.dissector (the
# zgame row: bodies compressed and XORed under header flags), genkcp.py and kcp.lua (the kcp row),
# gentls.py and tls_game.lua (the tls row), genmctext.py and mctext.lua (the mctext row),
# genmsgpack.py and msgpack.lua (the msgpack row), gensocketio.py (the socketio row), gengrpc.py (the grpc row),
# genwsgame.py and wsgame.lua (the wsgame row), genthrift.py (the thrift row).
#
# Usage: bench/run.sh [YARDSTICK_DIR]   (optional: another folder's pcapread.c, genbench.py and
#                                        game.lua to use instead, for comparison with them)
#   RUNS=3 SIZES="100000 1000000 5000000" WS_SIZES="200000 1000000" SKIP_TSHARK=1 bench/run.sh
#   IM_MESSAGES=500000 (the im row: protobuf bodies; 0 leaves it out)
#   ZLIB_MESSAGES=200000 (the zgame row: zlib/XOR bodies; 0 leaves it out)
#   KCP_MESSAGES=500000 (the kcp row: the game protocol over KCP over UDP; 0 leaves it out)
#   TLS_MESSAGES=200000 (the tls row: the game protocol in TLS 1.3, needs python3-cryptography; 0 leaves it out)
#   VARINT_MESSAGES=1000000 (the varint row: protobuf behind varint lengths, needs python3-protobuf; 0 leaves it out)
#   MCTEXT_MESSAGES=1000000 (the mctext row: memcached's text protocol, lines with counted data blocks; 0 leaves it out)
#   MSGPACK_MESSAGES=1000000 (the msgpack row: MessagePack bodies; 0 leaves it out)
#   SOCKETIO_MESSAGES=200000 (the socketio row: Socket.IO over WebSocket; 0 leaves it out)
#   GRPC_MESSAGES=200000 (the grpc row: gRPC over HTTP/2 with protobuf; 0 leaves it out)
#   WSGAME_MESSAGES=200000 (the wsgame row: WebSocket text messages behind a text header; 0 leaves it out)
#   THRIFT_MESSAGES=1000000 (the thrift row: Thrift's binary protocol over the framed transport; 0 leaves it out)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
sizes=${SIZES:-"100000 1000000 5000000"}
out=bench/out
mkdir -p "$out"
if [ $# -ge 1 ]; then
  floor_c="$1/pcapread.c"; gen="$1/genbench.py"; lua="$1/game.lua"
else
  floor_c=bench/floor.c; gen=bench/gengame.py; lua=bench/game.lua
fi

swift build -c release >/dev/null
bin=.build/release/framedump
cc -O2 "$floor_c" -lpcap -o "$out/floor"

# median wall seconds and max RSS (MiB) of a command, output discarded
measure() {
  local walls=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >/dev/null 2>&1 || true
    read -r w m <"$out/time.txt"
    walls+=("$w")
    (( m > rss )) && rss=$m
  done
  local med
  med=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$med $((rss / 1024))"
}

printf '| capture | command | wall (median of %s) | peak memory |\n|---|---|---|---|\n' "$runs"
for n in $sizes; do
  cap="$out/game-$n.pcap"
  [ -f "$cap" ] || python3 "$gen" "$cap" "$n" >/dev/null 2>&1
  row() { read -r w m < <(measure "$@"); printf '| %s msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="floor (libpcap reads every byte)"; row "$out/floor" "$cap"
  label="framedump -q"; row "$bin" -r "$cap" -q
  label="framedump (tree)"; row "$bin" -r "$cap"
  label="framedump -T json"; row "$bin" -r "$cap" -T json
  if [ "$n" = 1000000 ]; then
    label="framedump -q -Y 'msg.id == 30005'"; row "$bin" -r "$cap" -q -Y "msg.id == 30005"
    label="framedump -q -Y 'game.Res == 1'"; row "$bin" -r "$cap" -q -Y "game.Res == 1"
  fi
  if [ "$n" = 1000000 ] && [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + game.lua -V"; row tshark -r "$cap" -X "lua_script:$lua" -V
    label="tshark + game.lua -T json"; row tshark -r "$cap" -X "lua_script:$lua" -T json
  fi
done

# WebSocket with permessage-deflate (the bridge dissector: JSON text, appId + text binary),
# against tshark's own WebSocket dissector on the same file. bench/genws.py writes it.
ws_sizes=${WS_SIZES:-"200000 1000000"}
for n in $ws_sizes; do
  cap="$out/ws-$n.pcap"
  [ -f "$cap" ] || python3 bench/genws.py "$cap" "$n" >/dev/null
  row() { read -r w m < <(measure "$@"); printf '| %s ws msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q"; row "$bin" -r "$cap" -q
  label="framedump (tree)"; row "$bin" -r "$cap"
  label="framedump -T json"; row "$bin" -r "$cap" -T json
  if [ "$n" = 200000 ] && [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark -d tcp.port==8080,http -V"; row tshark -r "$cap" -d tcp.port==8080,http -V
    label="tshark ... -o websocket.text_type:json -V"; row tshark -r "$cap" -d tcp.port==8080,http -o websocket.text_type:json -V
    label="tshark -d tcp.port==8080,http -T json"; row tshark -r "$cap" -d tcp.port==8080,http -T json
  fi
done

# im (seed 002): protobuf bodies decoded against Dissectors/im.proto, framedump against
# tshark's protobuf dissector given the same .proto (bench/im.lua cuts the 12-byte header).
im_n=${IM_MESSAGES:-500000}
if [ "$im_n" != 0 ]; then
  cap="$out/im-$im_n.pcap"
  [ -f "$cap" ] || python3 bench/genim.py "$cap" "$im_n" >/dev/null
  n=$im_n
  row() { read -r w m < <(measure "$@"); printf '| %s im msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (im)"; row "$bin" -r "$cap" -q
  label="framedump (tree, im)"; row "$bin" -r "$cap"
  label="framedump -T json (im)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    pb=(-X lua_script:bench/im.lua -o "uat:protobuf_search_paths:\"$PWD/Dissectors\",\"TRUE\""
        -o 'uat:protobuf_search_paths:"/usr/include","FALSE"')
    label="tshark + im.lua + protobuf -V"; row tshark -r "$cap" "${pb[@]}" -V
    label="tshark + im.lua + protobuf -T json"; row tshark -r "$cap" "${pb[@]}" -T json
  fi
fi

# zgame (bench/genz.py, seed 7300): bodies zlib-compressed under header flag 0x01 (about half the
# messages: RoomState and long chat texts), every body XORed under flag 0x02 on a tenth of the
# connections. framedump with bench/zgame-bench.dissector (its transform lines) against tshark
# with bench/zgame.lua, which un-XORs in Lua and inflates with TvbRange:uncompress.
zlib_n=${ZLIB_MESSAGES:-200000}
if [ "$zlib_n" != 0 ]; then
  cap="$out/zgame-$zlib_n.pcap"
  [ -f "$cap" ] || python3 bench/genz.py "$cap" "$zlib_n" >/dev/null
  n=$zlib_n
  zd=(-d bench/zgame-bench.dissector)
  row() { read -r w m < <(measure "$@"); printf '| %s zgame msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (zgame)"; row "$bin" "${zd[@]}" -r "$cap" -q
  label="framedump (tree, zgame)"; row "$bin" "${zd[@]}" -r "$cap"
  label="framedump -T json (zgame)"; row "$bin" "${zd[@]}" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + zgame.lua -V"; row tshark -r "$cap" -X lua_script:bench/zgame.lua -V
    label="tshark + zgame.lua -T json"; row tshark -r "$cap" -X lua_script:bench/zgame.lua -T json
  fi
fi

# kcp (bench/genkcp.py): the game protocol in KCP message mode over UDP port 8100 (several
# segments per datagram, fragments, retransmissions), decoded with Dissectors/kcpgame.dissector,
# against tshark with bench/kcp.lua, a Lua KCP and game dissector (segments, fragments joined,
# retransmissions marked, the game frames inside).
kcp_n=${KCP_MESSAGES:-500000}
if [ "$kcp_n" != 0 ]; then
  cap="$out/kcp-$kcp_n.pcap"
  [ -f "$cap" ] || python3 bench/genkcp.py "$kcp_n" "$cap" >/dev/null
  n=$kcp_n
  row() { read -r w m < <(measure "$@"); printf '| %s kcp msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (kcp)"; row "$bin" -r "$cap" -q
  label="framedump (tree, kcp)"; row "$bin" -r "$cap"
  label="framedump -T json (kcp)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + kcp.lua -V"; row tshark -r "$cap" -X lua_script:bench/kcp.lua -V
  fi
fi

# tls (bench/gentls.py): the game protocol in TLS 1.3 (AES-128-GCM) on port 8000 with its NSS
# key log, framedump (the game dissector; TLS found by its ClientHello) against tshark
# decrypting with the same key log and handing the plaintext to bench/game.lua.
tls_n=${TLS_MESSAGES:-200000}
if [ "$tls_n" != 0 ]; then
  cap="$out/tls-$tls_n.pcap"; keys="$out/tls-$tls_n.keys"
  [ -f "$cap" ] || python3 bench/gentls.py "$cap" "$tls_n" "$keys" >/dev/null
  n=$tls_n
  row() { read -r w m < <(measure "$@"); printf '| %s tls msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (tls)"; row "$bin" -r "$cap" --tls-keylog "$keys" -q
  label="framedump (tree, tls)"; row "$bin" -r "$cap" --tls-keylog "$keys"
  label="framedump -T json (tls)"; row "$bin" -r "$cap" --tls-keylog "$keys" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + game.lua + tls_game.lua -V"
    row tshark -r "$cap" -o "tls.keylog_file:$keys" -d tcp.port==8000,tls -X lua_script:bench/game.lua -X lua_script:bench/tls_game.lua -V
  fi
fi

# varint (bench/genvarint.py): protobuf messages each behind its length as a varint (Netty's
# ProtobufVarint32 framing), decoded with Dissectors/chat.dissector as chat.Envelope, against
# tshark with bench/chat.lua (the varint framing in Lua, the body to tshark's protobuf dissector).
varint_n=${VARINT_MESSAGES:-1000000}
if [ "$varint_n" != 0 ]; then
  cap="$out/varint-$varint_n.pcap"
  [ -f "$cap" ] || python3 bench/genvarint.py "$cap" "$varint_n" >/dev/null
  n=$varint_n
  row() { read -r w m < <(measure "$@"); printf '| %s varint msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (varint)"; row "$bin" -r "$cap" -q
  label="framedump (tree, varint)"; row "$bin" -r "$cap"
  label="framedump -T json (varint)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    pb=(-X lua_script:bench/chat.lua -o "uat:protobuf_search_paths:\"$PWD/Dissectors\",\"TRUE\"")
    label="tshark + chat.lua + protobuf -V"; row tshark -r "$cap" "${pb[@]}" -V
    label="tshark + chat.lua + protobuf -T json"; row tshark -r "$cap" "${pb[@]}" -T json
  fi
fi

# mctext (bench/genmctext.py): memcached's text protocol, CR LF lines and the data blocks their
# words count (`payload`), decoded with Dissectors/memcached-text.dissector, against tshark with
# bench/mctext.lua (the same cut in Lua; tshark's own memcache dissector reads only the first
# command of a segment).
mctext_n=${MCTEXT_MESSAGES:-1000000}
if [ "$mctext_n" != 0 ]; then
  cap="$out/mctext-$mctext_n.pcap"
  [ -f "$cap" ] || python3 bench/genmctext.py "$cap" "$mctext_n" >/dev/null
  n=$mctext_n
  row() { read -r w m < <(measure "$@"); printf '| %s mctext msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (mctext)"; row "$bin" -r "$cap" -q
  label="framedump (tree, mctext)"; row "$bin" -r "$cap"
  label="framedump -T json (mctext)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + mctext.lua -V"; row tshark -r "$cap" -X lua_script:bench/mctext.lua -V
    label="tshark + mctext.lua -T json"; row tshark -r "$cap" -X lua_script:bench/mctext.lua -T json
  fi
fi

# msgpack (bench/genmsgpack.py): a game protocol with MessagePack bodies on port 7600 (maps,
# objects written as arrays, timestamps, binary, int-keyed maps), decoded with
# Dissectors/mpgame.dissector, against tshark with bench/msgpack.lua (Wireshark has no
# MessagePack dissector: the Lua one a team writes, every type of the format).
msgpack_n=${MSGPACK_MESSAGES:-1000000}
if [ "$msgpack_n" != 0 ]; then
  cap="$out/msgpack-$msgpack_n.pcap"
  [ -f "$cap" ] || python3 bench/genmsgpack.py "$cap" "$msgpack_n" >/dev/null
  n=$msgpack_n
  row() { read -r w m < <(measure "$@"); printf '| %s msgpack msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (msgpack)"; row "$bin" -r "$cap" -q
  label="framedump (tree, msgpack)"; row "$bin" -r "$cap"
  label="framedump -T json (msgpack)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark + msgpack.lua -V"; row tshark -r "$cap" -X lua_script:bench/msgpack.lua -V
    label="tshark + msgpack.lua -T json"; row tshark -r "$cap" -X lua_script:bench/msgpack.lua -T json
  fi
fi

# grpc (bench/gengrpc.py): gRPC over HTTP/2 (h2c) on port 50051, unary, server-streaming and
# bidirectional calls of Dissectors/grpcchat.proto's Chat service, decoded with
# Dissectors/grpcchat.dissector, against tshark's own HTTP/2, gRPC and protobuf dissectors
# reading the same .proto file.
grpc_n=${GRPC_MESSAGES:-200000}
if [ "$grpc_n" != 0 ]; then
  cap="$out/grpc-$grpc_n.pcap"
  [ -f "$cap" ] || python3 bench/gengrpc.py "$cap" "$grpc_n" >/dev/null
  n=$grpc_n
  row() { read -r w m < <(measure "$@"); printf '| %s grpc msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (grpc)"; row "$bin" -r "$cap" -q
  label="framedump (tree, grpc)"; row "$bin" -r "$cap"
  label="framedump -T json (grpc)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    protos="uat:protobuf_search_paths:\"$PWD/Dissectors\",\"TRUE\""
    label="tshark http2+grpc+protobuf -V"; row tshark -r "$cap" -d tcp.port==50051,http2 -o "$protos" -V
    label="tshark http2+grpc+protobuf -T json"; row tshark -r "$cap" -d tcp.port==50051,http2 -o "$protos" -T json
  fi
fi

# socketio (bench/gensocketio.py): Socket.IO v5 on Engine.IO v4 over WebSocket on port 7700
# (events with JSON arguments, acks, pings, binary events with attachments), decoded with
# Dissectors/socketio.dissector, against tshark's own WebSocket dissector reading each text
# message as JSON (Wireshark has no Socket.IO dissector; its JSON tree is the nearest it shows).
socketio_n=${SOCKETIO_MESSAGES:-200000}
if [ "$socketio_n" != 0 ]; then
  cap="$out/socketio-$socketio_n.pcap"
  [ -f "$cap" ] || python3 bench/gensocketio.py "$cap" "$socketio_n" >/dev/null
  n=$socketio_n
  row() { read -r w m < <(measure "$@"); printf '| %s socketio msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (socketio)"; row "$bin" -r "$cap" -q
  label="framedump (tree, socketio)"; row "$bin" -r "$cap"
  label="framedump -T json (socketio)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark websocket+json -V"; row tshark -r "$cap" -d tcp.port==7700,http -o "websocket.text_type:As json" -V
    label="tshark websocket+json -T json"; row tshark -r "$cap" -d tcp.port==7700,http -o "websocket.text_type:As json" -T json
  fi
fi

# wsgame (bench/genwsgame.py): a game's text sub-protocol over WebSocket on port 7710, each text
# message CMD|SEQ|JSON, decoded with Dissectors/wsgame.dissector (a text header), against tshark
# with bench/wsgame.lua (the digits read in Lua, the rest handed to Wireshark's JSON dissector).
wsgame_n=${WSGAME_MESSAGES:-200000}
if [ "$wsgame_n" != 0 ]; then
  cap="$out/wsgame-$wsgame_n.pcap"
  [ -f "$cap" ] || python3 bench/genwsgame.py "$cap" "$wsgame_n" >/dev/null
  n=$wsgame_n
  row() { read -r w m < <(measure "$@"); printf '| %s wsgame msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (wsgame)"; row "$bin" -r "$cap" -q
  label="framedump (tree, wsgame)"; row "$bin" -r "$cap"
  label="framedump -T json (wsgame)"; row "$bin" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark websocket+wsgame.lua -V"; row tshark -r "$cap" -X lua_script:bench/wsgame.lua -d tcp.port==7710,http -V
    label="tshark websocket+wsgame.lua -T json"; row tshark -r "$cap" -X lua_script:bench/wsgame.lua -d tcp.port==7710,http -T json
  fi
fi

# thrift (bench/genthrift.py): Apache Thrift's strict binary protocol over the framed transport on
# port 9090, a game service's calls and replies (move, chat, inventory: structs, strings, a list of
# structs with maps inside), decoded with Dissectors/thrift.dissector, against tshark's own Thrift
# dissector on the same port.
thrift_n=${THRIFT_MESSAGES:-1000000}
if [ "$thrift_n" != 0 ]; then
  cap="$out/thrift-$thrift_n.pcap"
  [ -f "$cap" ] || python3 bench/genthrift.py "$cap" "$thrift_n" >/dev/null
  n=$thrift_n
  td=(-d Dissectors/thrift.dissector)
  row() { read -r w m < <(measure "$@"); printf '| %s thrift msgs | `%s` | %s s | %s MiB |\n' "$n" "$label" "$w" "$m"; }
  label="framedump -q (thrift)"; row "$bin" "${td[@]}" -r "$cap" -q
  label="framedump (tree, thrift)"; row "$bin" "${td[@]}" -r "$cap"
  label="framedump -T json (thrift)"; row "$bin" "${td[@]}" -r "$cap" -T json
  if [ -z "${SKIP_TSHARK:-}" ]; then
    label="tshark -d tcp.port==9090,thrift -V"; row tshark -r "$cap" -d tcp.port==9090,thrift -V
    label="tshark -d tcp.port==9090,thrift -T json"; row tshark -r "$cap" -d tcp.port==9090,thrift -T json
  fi
fi
