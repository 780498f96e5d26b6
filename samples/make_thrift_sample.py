#!/usr/bin/env python3
"""Record samples/thrift.pcap: Apache Thrift's binary protocol between real thriftpy2 servers and
real thriftpy2 clients on loopback, the service `Inventory` of samples/thrift.thrift; and
samples/thrift.messages.json, every message the peers sent. Run as root from the repository root
(`pip install thriftpy2`; recorded with thriftpy2 0.7.1, its Cython protocol and transports):

    python3 samples/make_thrift_sample.py

The protocol: TBinaryProtocol, strict (thriftpy2 writes the version word): a message is
`[int32 0x80010000 | type][int32 length][method name][int32 seqid]` then one struct, the
arguments of a call (type 1, or 4 oneway) or the result of a reply (type 2: field 0 the return
value, field n the n-th declared exception, no field at all for a void method), or a
TApplicationException (type 3: field 1 its message, string; field 2 its type, i32). A struct is
fields `[int8 type][int16 id][value]` ended by a 0 byte; a string or binary is `[int32
length][bytes]`; a list or set `[int8 element type][int32 count]` then the elements; a map `[int8
key type][int8 value type][int32 count]` then key, value, key, value; bool and i8 one byte, i16,
i32, i64 and double (IEEE 754) big-endian. Two transports:

    port 9090  TFramedTransport    every message preceded by its length, an int32
    port 9091  TBufferedTransport  messages back to back, nothing between them (a message ends
                                   where its struct ends)

Scenario: one thriftpy2 server on each port (TProcessor over thriftpy2's TServerSocket, in a
thread of this process, for two connections, one after the other), and on each port two client
connections, one after the other (connections 1 and 2 on 9090, 3 and 4 on 9091: the number is
tshark's tcp.stream plus one):

    connections 1 and 3, thriftpy2's TClient as it is: every call has seqid 0
        ping (void), put_item (an Item: every scalar type, a binary, an enum, a struct in a
        struct, list<string>, set<string>, map<string,i32>), get_item, get_item of a missing
        id (the declared NotFound: a reply whose result has field 1, not 0), find (list<i32>
        and list<string> asked, a list<Item> answered), histogram (map<string,i32> asked,
        map<string,list<i32>> answered), log_event (oneway: no reply), echo of a 3,000-byte
        string, echo of an empty string, ping
    connections 2 and 4, a client of InventoryV2 (Inventory and one method more) whose calls
    are numbered from 1, as Apache Thrift's Java and C++ clients number theirs
        negate (negative i8, i16, i32, i64, double and list<i32>), index (set<string> asked,
        map<i32,Item> answered), index of an empty set (an empty map), find of nothing (an
        empty list), echo of non-ASCII text, crash (the handler raises TApplicationException
        INTERNAL_ERROR: an exception message, type 3, with a text), restock (a method the
        server does not have: TApplicationException UNKNOWN_METHOD, type 3, no text),
        log_event (oneway) and ping in one write (one segment, two messages), ping again

Sets are given as sorted lists so that they go on the wire in the same order from run to run (a
Python set of strings changes its order with hash randomization). Every socket has TCP_NODELAY
(thriftpy2's client sets it; the script sets it on the server's), so on `lo` one write is one
segment: every write longer than 1,000 bytes (the 3,000-byte echo and its reply) is made in
1,000-byte pieces, so that it spans several segments, and the oneway log_event of connections 2
and 4 is held back and written with the ping that follows it, so that one segment carries two
messages. Every socket has a 5-second timeout, the servers stop after their two connections,
tcpdump is stopped by its own PID.

thrift.messages.json: the messages in the order sent, each {"port", "connection", "direction"
("c2s" or "s2c"), "type" ("call", "reply", "exception" or "oneway"), "mtype" (the message type on
the wire, 1-4), "method", "seqid", "fields" (the ids of the fields its struct carries, in wire
order), "length" (the message's bytes, without the frame length of port 9090), "hex" (the
message)}; logged from each peer's protocol as it wrote the message (the bytes encoded again by
thriftpy2's pure-Python binary protocol) and checked against tshark's follow of each stream.
"""
import io, json, os, socket, subprocess, threading, time

import thriftpy2
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.protocol import binary as purebinary
from thriftpy2.thrift import TApplicationException, TClient, TMessageType, TProcessor, TType
from thriftpy2.transport import (TBufferedTransportFactory, TFramedTransportFactory, TServerSocket, TSocket,
                                 TTransportException)

from capture import Capture, follow

HERE = os.path.dirname(os.path.abspath(__file__))
FRAMED, BUFFERED = 9090, 9091
TIMEOUT = 5
PIECE = 1000
LOG = []
CONNECTIONS = {}  # a client's local port -> its connection number
TYPES = {TMessageType.CALL: "call", TMessageType.REPLY: "reply", TMessageType.EXCEPTION: "exception",
         TMessageType.ONEWAY: "oneway"}

inventory = thriftpy2.load(os.path.join(HERE, "thrift.thrift"), module_name="inventory_thrift")
Item, Box, Point, Numbers, Color = inventory.Item, inventory.Box, inventory.Point, inventory.Numbers, inventory.Color


class Logged:
    """A peer's protocol, which logs every message its peer writes: the header when it is begun,
    the struct's field ids and the message's bytes when its struct is written. `connection`
    is the connection's number, or (on the server's side) a function that gives it."""

    def __init__(self, proto, port, connection, direction):
        self._proto, self._port, self._connection, self._direction = proto, port, connection, direction
        self._entry = None

    def __getattr__(self, name):
        return getattr(self._proto, name)

    def write_message_begin(self, name, ttype, seqid):
        n = self._connection() if callable(self._connection) else self._connection
        self._entry = {"port": self._port, "connection": n, "direction": self._direction, "type": TYPES[ttype],
                       "mtype": ttype, "method": name, "seqid": seqid}
        LOG.append(self._entry)
        self._proto.write_message_begin(name, ttype, seqid)

    def write_struct(self, obj):
        if self._entry is not None:
            e, self._entry = self._entry, None
            e["fields"] = [fid for fid, spec in obj.thrift_spec.items() if getattr(obj, spec[1], None) is not None]
            out = io.BytesIO()
            purebinary.write_message_begin(out, e["method"], e["mtype"], e["seqid"], strict=True)
            purebinary.write_val(out, TType.STRUCT, obj)
            e["length"], e["hex"] = len(out.getvalue()), out.getvalue().hex()
        self._proto.write_struct(obj)


class Pieces(TSocket):
    """thriftpy2's socket, with TCP_NODELAY, writing what is longer than PIECE in PIECE-byte
    pieces, each its own segment; while `hold` is set it keeps what it is given, to write it
    with what comes next in one write."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.sock is not None:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.hold, self.held = False, b""

    def write(self, buf):
        if self.hold:
            self.held += buf
            return
        buf, self.held = self.held + buf, b""
        for at in range(0, len(buf), PIECE):
            if at:
                time.sleep(0.05)
            self.sock.sendall(buf[at:at + PIECE])


class NumberedClient(TClient):
    """thriftpy2's TClient sends every call with seqid 0; this one numbers its calls 1, 2, 3..."""

    def _req(self, api, *args, **kw):
        self._seqid += 1
        return super()._req(api, *args, **kw)


def labels(*names):
    """A set<string>, as a sorted list: the same order on the wire at every run."""
    return sorted(names)


WIDGET = Item(id=1, name="widget", in_stock=True, grade=5, shelf=12, quantity=250, price=19.99,
              checksum=bytes(range(0, 256, 17)), color=Color.BLUE,
              box=Box(width=2.5, height=0.75, corner=Point(x=-3, y=4)),
              tags=["metal", "small"], labels=labels("sale", "new"), stock={"north": 120, "south": 130},
              note="fragile")
GADGET = Item(id=2, name="gädget", in_stock=False, grade=-1, shelf=-300, quantity=0, price=-0.5, checksum=b"",
              color=Color.UNPAINTED, box=Box(width=1e-3, height=1e6, corner=Point(x=2147483647, y=-2147483648)),
              tags=[], labels=labels("metal"), stock={})
LONG_TEXT = "".join("line %03d of a long echo. " % i for i in range(200))[:3000]


class Handler:
    """The server's side of Inventory (its answers fixed, so that a second run sends the same)."""

    def __init__(self):
        self.items = {2: GADGET}
        self.events = []

    def ping(self):
        pass

    def echo(self, text):
        return text

    def put_item(self, item):
        self.items[item.id] = item
        return (1 << 40) + item.id

    def get_item(self, id):
        if id not in self.items:
            raise inventory.NotFound(id=id, reason="no item %d" % id)
        return self.items[id]

    def find(self, ids, names):
        return [self.items[i] for i in ids if i in self.items] + \
               [x for x in self.items.values() if x.name in names and x.id not in ids]

    def index(self, wanted):
        return {i: x for i, x in sorted(self.items.items()) if set(x.labels) & set(wanted)}

    def histogram(self, counts, width):
        return {k: [v // width, v % width, -v] for k, v in counts.items()}

    def negate(self, n):
        return Numbers(flag=not n.flag, tiny=-n.tiny, small=-n.small, medium=-n.medium, large=-n.large,
                       real=-n.real, values=[-v for v in n.values])

    def log_event(self, event, color):
        self.events.append((event, color))

    def crash(self, why):
        raise TApplicationException(TApplicationException.INTERNAL_ERROR, "crash asked for: " + why)


class Server(threading.Thread):
    """A thriftpy2 server on 127.0.0.1 `port` for `connections` connections, one after the other
    (what thriftpy2's TSimpleServer does, bounded: TIMEOUT to accept, TIMEOUT on each read)."""

    def __init__(self, port, transports, connections=2):
        super().__init__(daemon=True)
        self.port, self.transports, self.connections, self.error = port, transports, connections, None
        # (thriftpy2 listens with SO_REUSEPORT: another server on the port would get some connections)
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                raise SystemExit("port %d is already in use" % port)
        self.listener = TServerSocket(host="127.0.0.1", port=port, client_timeout=TIMEOUT * 1000)
        self.listener.listen()
        self.listener.sock.settimeout(TIMEOUT)
        self.start()

    def run(self):
        processor = TProcessor(inventory.Inventory, Handler())
        try:
            for _ in range(self.connections):
                conn = Pieces(sock=self.listener.accept().sock)
                trans = self.transports.get_transport(conn)
                # (known once the client has sent its first call: it may not be when accepted)
                peer = conn.sock.getpeername()[1]
                proto = Logged(TBinaryProtocolFactory().get_protocol(trans), self.port,
                               lambda: CONNECTIONS[peer], "s2c")
                try:
                    while True:
                        processor.process(proto, proto)
                except TTransportException:
                    pass  # the client closed the connection
                trans.close()
        except Exception as e:
            self.error = e
        finally:
            self.listener.close()


def connect(port, transports, service, client_class):
    n = len(CONNECTIONS) + 1
    sock = Pieces("127.0.0.1", port, socket_timeout=TIMEOUT * 1000)
    trans = transports.get_transport(sock)
    trans.open()
    CONNECTIONS[sock.sock.getsockname()[1]] = n
    return client_class(service, Logged(TBinaryProtocolFactory().get_protocol(trans), port, n, "c2s")), trans, sock


def plain_calls(port, transports):
    """thriftpy2's client as it is (seqid 0)."""
    c, trans, _ = connect(port, transports, inventory.Inventory, TClient)
    assert c.ping() is None
    assert c.put_item(WIDGET) == (1 << 40) + 1
    got = c.get_item(1)
    assert (got.name, got.box.corner.x, got.checksum, got.note) == ("widget", -3, WIDGET.checksum, "fragile")
    try:
        c.get_item(-42)
        raise SystemExit("get_item(-42) should have raised NotFound")
    except inventory.NotFound as e:
        assert (e.id, e.reason) == (-42, "no item -42")
    assert [x.id for x in c.find([1, 2, -3], ["gädget", "widget"])] == [1, 2]
    assert c.histogram({"red": 7, "green": -12, "blue": 0}, 5) == {"red": [1, 2, -7], "green": [-3, 3, 12],
                                                                   "blue": [0, 0, 0]}
    c.log_event("restocked", Color.GREEN)
    assert c.echo(LONG_TEXT) == LONG_TEXT
    assert c.echo("") == ""
    assert c.ping() is None
    trans.close()


def numbered_calls(port, transports):
    """A newer client (InventoryV2), its calls numbered from 1."""
    c, trans, sock = connect(port, transports, inventory.InventoryV2, NumberedClient)
    got = c.negate(Numbers(flag=True, tiny=-100, small=-30000, medium=-2000000000, large=-(1 << 62), real=-2.75,
                           values=[-1, 0, 1, -65536]))
    assert (got.flag, got.tiny, got.small, got.medium, got.large, got.real, got.values) == \
        (False, 100, 30000, 2000000000, 1 << 62, 2.75, [1, 0, -1, 65536])
    assert sorted(c.index(labels("metal", "sale"))) == [1, 2]
    assert c.index([]) == {}
    assert c.find([], []) == []
    assert c.echo("héllo, 世界") == "héllo, 世界"
    for call, kind in ((lambda: c.crash("disk on fire"), TApplicationException.INTERNAL_ERROR),
                       (lambda: c.restock(1, 5), TApplicationException.UNKNOWN_METHOD)):
        try:
            call()
            raise SystemExit("should have raised TApplicationException %d" % kind)
        except TApplicationException as e:
            assert e.type == kind, (e.type, kind)
    sock.hold = True  # the oneway call and the next one in one write, one segment
    c.log_event("bye", Color.RED)
    sock.hold = False
    assert c.ping() is None
    assert c.ping() is None
    trans.close()


def check(pcap):
    """Each direction's bytes in the capture, as tshark's follow,tcp gives them, are the messages
    logged, back to back (on port 9090 each preceded by its length), each a whole message."""
    if subprocess.run(["which", "tshark"], capture_output=True).returncode != 0:
        print("tshark not found: the capture is not cross-checked")
        return
    for client_port, n in CONNECTIONS.items():
        port = next(e["port"] for e in LOG if e["connection"] == n)
        sides = follow(pcap, "127.0.0.1:%d,127.0.0.1:%d" % (client_port, port))
        for d in ("c2s", "s2c"):
            data, pos = sides[d], 0
            for e in (e for e in LOG if e["connection"] == n and e["direction"] == d):
                if port == FRAMED:
                    assert int.from_bytes(data[pos:pos + 4], "big") == e["length"], (n, d, e["method"])
                    pos += 4
                msg = data[pos:pos + e["length"]]
                assert msg.hex() == e["hex"], (n, d, e["method"])
                buf = io.BytesIO(msg)  # the message read back: its header, then its struct skipped
                assert purebinary.read_message_begin(buf) == (e["method"], e["mtype"], e["seqid"])
                purebinary.skip(buf, TType.STRUCT)
                assert buf.tell() == len(msg), (n, d, e["method"])
                pos += e["length"]
            assert pos == len(data), (n, d, pos, len(data))
    print("checked against tshark's follow,tcp:", len(LOG), "messages")


def main():
    out = os.path.join(HERE, "thrift.pcap")
    started = time.time()
    servers = [Server(FRAMED, TFramedTransportFactory()), Server(BUFFERED, TBufferedTransportFactory())]
    with Capture(out, bpf="tcp port %d or tcp port %d" % (FRAMED, BUFFERED)):
        for port, transports in ((FRAMED, TFramedTransportFactory()), (BUFFERED, TBufferedTransportFactory())):
            plain_calls(port, transports)
            numbered_calls(port, transports)
        for s in servers:
            s.join(TIMEOUT)
            if s.is_alive() or s.error:
                raise SystemExit("the server on port %d failed: %r" % (s.port, s.error or "still running"))
    check(out)
    path = os.path.join(HERE, "thrift.messages.json")
    with open(path, "w") as f:
        json.dump(LOG, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path, "(%d messages) in %.1f s" % (len(LOG), time.time() - started))


if __name__ == "__main__":
    main()
