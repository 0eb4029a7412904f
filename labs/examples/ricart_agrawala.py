#!/usr/bin/env python3
"""Ricart-Agrawala mutual exclusion as a mutexlab worker, in plain Python 3.

Run it with:
    mutexlab run --worker-cmd 'python3 labs/examples/ricart_agrawala.py' -n 4 -k 20

The algorithm (the notes' Algorithm 10.2). A node that wants the critical section
takes a ticket one above the highest ticket it has seen, and sends REQUEST(ticket) to
every other node. It goes in once every other node has sent a REPLY. A node that
receives a REQUEST replies at once, unless it is itself asking (or inside) with a
better claim, a smaller (ticket, id) pair: then it defers the REPLY until it leaves
the critical section. The deferred replies are the release, so an entry costs
2(N-1) messages: N-1 REQUESTs and N-1 REPLYs.

Crashes. A peer whose channel closed (peer_down) is dead, so not inside: a node
counts it as a yes and does not ask it while it stays down. A peer that comes back
(peer_up) is a fresh process that knows nothing of us, so a node still asking sends
it the REQUEST again; a REQUEST deferred for its old life is dropped.

How the program talks to mutexlab (labs/PROTOCOL.md has the details): every line on
stdin is one JSON input; for each, the program prints exactly one line, a JSON list
of outputs. Anything printed to stderr is shown in the run's log, prefixed by the
worker's id.
"""

import json
import sys


class RicartAgrawala:
    """One node's state and its handlers. Each handler returns a list of outputs."""

    def __init__(self, me, peers):
        self.me = me
        self.peers = peers          # every other node's id
        self.highest = 0            # highest ticket seen so far
        self.ticket = 0             # our ticket while we ask or are inside
        self.asking = False         # asked, not yet inside
        self.inside = False
        self.replies = set()        # peers that said yes to our current ticket
        self.deferred = []          # peers we owe a REPLY once we leave
        self.down = set()           # peers whose channel closed: dead, not inside

    # -- the application ---------------------------------------------------------

    def want(self):
        self.ticket = self.highest + 1
        self.highest = self.ticket
        self.asking = True
        self.replies = set(self.down)   # a dead peer is not inside: that is a yes
        asked = [p for p in self.peers if p not in self.down]
        outputs = [send(p, {"type": "REQUEST", "ticket": self.ticket}) for p in asked]
        return outputs + self.try_enter()

    def done(self):
        self.inside = False
        owed, self.deferred = self.deferred, []
        return [send(p, {"type": "REPLY"}) for p in owed]

    # -- messages ----------------------------------------------------------------

    def on_request(self, sender, ticket):
        self.highest = max(self.highest, ticket)
        ours_first = (self.asking or self.inside) and (self.ticket, self.me) < (ticket, sender)
        if ours_first:
            self.deferred.append(sender)
            return []
        return [send(sender, {"type": "REPLY"})]

    def on_reply(self, sender):
        if self.asking:
            self.replies.add(sender)
        return self.try_enter()

    # -- peers crashing and coming back -----------------------------------------

    def peer_down(self, peer):
        self.down.add(peer)
        self.deferred = [p for p in self.deferred if p != peer]
        if self.asking:
            self.replies.add(peer)
        return self.try_enter()

    def peer_up(self, peer):
        # The new process never saw our REQUEST, and a REPLY from the old one does
        # not speak for it: ask again.
        self.down.discard(peer)
        self.deferred = [p for p in self.deferred if p != peer]
        if self.asking:
            self.replies.discard(peer)
            return [send(peer, {"type": "REQUEST", "ticket": self.ticket})]
        return []

    # -- helpers -----------------------------------------------------------------

    def try_enter(self):
        """The notes' "wait until every reply is in", checked after each change."""
        if self.asking and self.replies == set(self.peers):
            self.asking = False
            self.inside = True
            return [{"type": "enter"}]
        return []


def send(to, msg):
    return {"type": "send", "to": to, "msg": msg}


def handle(node, line):
    """One input in, the list of outputs out."""
    kind = line["type"]
    if kind == "call" and line["call"] == "want":
        return node.want()
    if kind == "call" and line["call"] == "done":
        return node.done()
    if kind == "message":
        msg = line["msg"]
        if msg["type"] == "REQUEST":
            return node.on_request(line["from"], msg["ticket"])
        if msg["type"] == "REPLY":
            return node.on_reply(line["from"])
        print(f"ignoring a message I do not know: {msg}", file=sys.stderr)
    if kind == "peer_down":
        return node.peer_down(line["peer"])
    if kind == "peer_up":
        return node.peer_up(line["peer"])
    # start and timers: nothing to do here.
    return []


def main():
    node = None
    for text in sys.stdin:
        line = json.loads(text)
        if line["type"] == "init":
            node = RicartAgrawala(line["id"], line["peers"])
            print(f"ready: node {line['id']} of {line['n']}", file=sys.stderr)
            answer = {"type": "init_ok"}
        else:
            answer = handle(node, line)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
