#!/usr/bin/env python3
"""Record samples/mqtt.pcap: MQTT 3.1.1 between the real mosquitto broker and real paho-mqtt
clients on loopback. Run as root from the repository root (Debian's mosquitto and
python3-paho-mqtt installed; Debian's python3):

    /usr/bin/python3 samples/make_mqtt_sample.py

The protocol is Dissectors/mqtt.dissector: a first byte whose high nibble is the packet type
(`message_id = fixed.type;`), the Remaining Length as a varint of at most 4 bytes, and bodies
whose fields depend on the flags (a PUBLISH's packet id only under QoS 1 and 2; CONNECT's will,
user name and password under its connect flags).

Scenario: mosquitto on 127.0.0.1 port 1883 (its own configuration, no persistence, stopped by
its PID); a subscriber subscribes to three filters at QoS 0, 1 and 2; a publisher that connects
with a user name, a password and a will publishes at QoS 0, 1 and 2 (the QoS 2 exchange's
PUBREC/PUBREL/PUBCOMP), a retained message, a 300-byte payload (a 2-byte Remaining Length) and a
20,000-byte one (3 bytes); a late subscriber gets the retained message; keep-alives of 1 second
bring PINGREQ/PINGRESP; the subscriber unsubscribes; everyone disconnects, and the publisher's
socket is closed without DISCONNECT, so the broker sends its will. tshark's MQTT dissector is
the oracle the tests compare with.
"""
import os, subprocess, sys, tempfile, threading, time

import paho.mqtt.client as mqtt

from capture import Capture

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 1883
TIMEOUT = 10


class Peer:
    """A paho client whose callbacks signal events the scenario waits for."""

    def __init__(self, name, **connect):
        self.c = mqtt.Client(client_id=name, protocol=mqtt.MQTTv311, clean_session=True)
        self.got, self.events = [], {}
        self.c.on_connect = lambda c, u, f, rc: self.signal("connected")
        self.c.on_subscribe = lambda c, u, mid, q: self.signal("subscribed")
        self.c.on_unsubscribe = lambda c, u, mid: self.signal("unsubscribed")
        self.c.on_message = lambda c, u, m: (self.got.append((m.topic, len(m.payload), m.qos, m.retain)), self.signal("message"))
        if "user" in connect:
            self.c.username_pw_set(connect["user"], connect["password"])
        if "will" in connect:
            self.c.will_set(*connect["will"])
        self.c.connect("127.0.0.1", PORT, keepalive=connect.get("keepalive", 60))
        self.c.loop_start()
        self.wait("connected")

    def signal(self, what):
        self.events.setdefault(what, threading.Event()).set()

    def wait(self, what, count=None):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            if count is not None and len(self.got) >= count:
                return
            if count is None and what in self.events and self.events[what].is_set():
                self.events[what].clear()
                return
            time.sleep(0.02)
        raise SystemExit("timed out waiting for %s" % what)


def scenario():
    sub = Peer("sub1", keepalive=1)
    sub.c.subscribe([("game/+/state", 0), ("chat/#", 1), ("alerts", 2), ("clients/+/status", 1)])
    sub.wait("subscribed")
    pub = Peer("pub1", user="tester", password="s3cret", will=("clients/pub1/status", "gone", 1, False))
    pub.c.publish("game/1/state", b'{"hp":100}', qos=0).wait_for_publish(TIMEOUT)
    pub.c.publish("chat/room1", "hello from pub1", qos=1).wait_for_publish(TIMEOUT)
    pub.c.publish("alerts", "server restart in 5 minutes", qos=2).wait_for_publish(TIMEOUT)
    pub.c.publish("game/2/state", b'{"hp":42}', qos=1, retain=True).wait_for_publish(TIMEOUT)
    pub.c.publish("chat/room1", "x" * 300, qos=1).wait_for_publish(TIMEOUT)
    pub.c.publish("chat/big", bytes(i % 251 for i in range(20000)), qos=1).wait_for_publish(TIMEOUT)
    sub.wait("message", count=6)
    late = Peer("late1")
    late.c.subscribe("game/+/state", 1)
    late.wait("message", count=1)
    time.sleep(2.5)  # keep-alives of one second: PINGREQ and PINGRESP
    sub.c.unsubscribe(["alerts", "chat/#"])
    sub.wait("unsubscribed")
    # The publisher's socket closes without DISCONNECT: the broker publishes its will.
    pub.c.loop_stop()
    pub.c.socket().close()
    sub.wait("message", count=7)
    for p in (late, sub):
        p.c.disconnect()
        p.c.loop_stop()
    time.sleep(0.3)
    return sub.got, late.got


def main():
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % PORT)
    conf.close()
    out = os.path.join(HERE, "mqtt.pcap")
    with Capture(out, PORT):
        broker = subprocess.Popen(["mosquitto", "-c", conf.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            got = scenario()
        finally:
            broker.terminate()
            broker.wait(TIMEOUT)
            os.remove(conf.name)
    print("subscriber got", got[0])
    print("late subscriber got", got[1])


if __name__ == "__main__":
    main()
