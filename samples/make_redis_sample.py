#!/usr/bin/env python3
"""Record samples/redis.pcap: Redis's RESP protocol between the real redis-server and the real
redis-py client (the `redis` package) on loopback. Run as root from the repository root
(Debian's redis-server; `pip install --break-system-packages redis` into Debian's python3):

    /usr/bin/python3 samples/make_redis_sample.py

The protocol is RESP: a command is an array of bulk strings (`*<n>\r\n` then, for each
argument, `$<bytes>\r\n<bytes>\r\n`); a reply is one value whose first byte names its type
(`+` simple string, `-` error, `:` integer, `$` bulk string, `*` array, and with RESP3 also
`%` map, `~` set, `_` null, ...). A bulk string's length comes from its own header line, so a
value holding "\r\n" is not cut there; `$-1` is RESP2's null.

Scenario: redis-server on 127.0.0.1 port 6379 (its own process, no persistence, stopped by its
PID); two clients, each its own connection: one speaking RESP2, the other RESP3 (HELLO 3, its
handshake answered with a map), neither sending CLIENT SETINFO nor maintenance notifications.
SET and GET of a plain string, GET of a missing key (null), a value whose bytes hold "\r\n", an
empty value, a value of all 256 byte values, a 100,000-byte value (sent and answered over many
segments), INCR and INCRBY, INCR of a non-integer string (an -ERR reply), MSET and MGET of three
keys with a missing one in the middle, LPUSH and LRANGE (an array), HSET and HGETALL (an array in
RESP2, a map in RESP3), SADD and SMEMBERS of small integers (an intset, so the order is fixed; a
set in RESP3), EXPIRE and TTL, DEL, EXISTS, a pipeline of five commands without MULTI (five
commands in one write, five replies in one), PING, and PUBLISH to a channel nobody listens to.
Every key and value is fixed, so a new recording differs only in timestamps, ports, where TCP
cuts the 100,000-byte value, and the server's version in the HELLO reply.
"""
import os

import redis
from redis.maint_notifications import MaintNotificationsConfig

from capture import record_with_server

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 6379
TIMEOUT = 10


def client(protocol):
    # driver_info=None: no CLIENT SETINFO (the library's name and version) after connecting;
    # maintenance notifications off: no CLIENT MAINT_NOTIFICATIONS after HELLO 3.
    return redis.Redis(host="127.0.0.1", port=PORT, protocol=protocol, socket_timeout=TIMEOUT,
                       socket_connect_timeout=TIMEOUT, driver_info=None,
                       maint_notifications_config=MaintNotificationsConfig(enabled=False))


def scenario():
    a = client(2)
    b = client(3)
    assert a.ping() is True
    assert b.ping() is True
    assert a.set("player:1", "ann level 7") is True
    assert a.get("player:1") == b"ann level 7"
    assert b.get("player:1") == b"ann level 7"
    assert a.get("missing") is None
    assert b.get("missing") is None
    assert a.set("crlf", b"line one\r\nline two\r\n") is True
    assert b.get("crlf") == b"line one\r\nline two\r\n"
    assert b.set("empty", b"") is True
    assert a.get("empty") == b""
    every_byte = bytes(range(256))
    assert a.set("bytes", every_byte) is True
    assert b.get("bytes") == every_byte
    big = bytes(b"0123456789abcdef"[i % 16] for i in range(100000))
    assert b.set("big", big) is True
    assert a.get("big") == big
    assert a.set("counter", "10") is True
    # redis-py's incr() sends INCRBY <key> 1; the literal INCR goes through execute_command.
    assert a.execute_command("INCR", "counter") == 11
    assert b.incrby("counter", 5) == 16
    for c in (a, b):
        try:
            c.execute_command("INCR", "player:1")
            raise SystemExit("INCR of a string succeeded")
        except redis.ResponseError as e:
            assert "not an integer" in str(e), e
    assert a.mset({"k1": "v1", "k2": "v2", "k3": "v3"}) is True
    assert a.mget(["k1", "nope", "k3"]) == [b"v1", None, b"v3"]
    assert b.mget(["k1", "nope", "k3"]) == [b"v1", None, b"v3"]
    assert a.lpush("queue", "one", "two", "three") == 3
    assert a.lrange("queue", 0, -1) == [b"three", b"two", b"one"]
    assert b.lrange("queue", 0, -1) == [b"three", b"two", b"one"]
    assert b.hset("user:7", mapping={"name": "bob", "level": "3", "city": "Lyon"}) == 3
    assert a.hgetall("user:7") == {b"name": b"bob", b"level": b"3", b"city": b"Lyon"}
    assert b.hgetall("user:7") == {b"name": b"bob", b"level": b"3", b"city": b"Lyon"}
    assert a.sadd("primes", "7", "2", "5", "3") == 4
    assert a.smembers("primes") == {b"2", b"3", b"5", b"7"}
    assert b.smembers("primes") == {b"2", b"3", b"5", b"7"}
    assert b.expire("player:1", 300) is True
    assert a.ttl("player:1") == 300
    assert b.ttl("player:1") == 300
    assert a.exists("k1", "k2", "nope") == 2
    assert b.delete("k2", "nope") == 1
    assert a.exists("k2") == 0
    pipe = a.pipeline(transaction=False)
    pipe.set("p:1", "first").get("p:1").execute_command("INCR", "p:count").lpush("p:list", "x", "y").get("nope")
    assert pipe.execute() == [True, b"first", 1, 2, None]
    assert a.publish("news", "nobody listens") == 0
    assert b.publish("news", "nobody listens") == 0
    assert b.ping() is True
    a.close()
    b.close()


def main():
    record_with_server(os.path.join(HERE, "redis.pcap"), PORT,
                       ["redis-server", "--port", str(PORT), "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--daemonize", "no"],
                       scenario)


if __name__ == "__main__":
    main()
