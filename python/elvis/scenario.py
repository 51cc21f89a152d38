"""Scenarios built in Python: networks, topologies and machines with their
protocols and applications, written out as NDL (docs/ndl.md) and run.

    >>> s = elvis.Scenario(seed=1, until="10s")
    >>> s.network("lan", bandwidth="100Mbps", latency="50us", subnet="10.0.0.0/24")
    >>> s.machine("a", networks=["lan"], protocols=["UDP"],
    ...           applications=[("ping", {"to": "b", "count": 3})])
    >>> s.machine("b", networks=["lan"])
    >>> report = s.run()

Every method returns the scenario, so calls chain. Keys and values are
NDL's own (``bandwidth='100Mbps'``, ``count=3``); the NDL text is
``s.ndl()``, so an error (``NdlError``) names a line of that text, and
what is not NDL is refused the way a file would be.
"""

__all__ = ["Scenario"]


def _value(key, v):
    if isinstance(v, bool):
        v = "yes" if v else "no"
    text = str(v)
    if "'" in text or "\n" in text:
        raise ValueError("%s=%r: NDL values hold no quote or newline" % (key, v))
    return text


def _keys(options):
    return "".join(" %s='%s'" % (k, _value(k, v)) for k, v in options.items() if v is not None)


def _first(key, options):
    """``options`` with ``key`` first (a new dict: ``ndl`` may run again)."""
    head = {key: options[key]}
    head.update((k, v) for k, v in options.items() if k != key)
    return head


def _named(item, what):
    """``'UDP'`` or ``('UDP', {...})`` -> (name, options)."""
    if isinstance(item, str):
        return item, {}
    try:
        name, options = item
    except (TypeError, ValueError):
        raise TypeError("a %s is a name or a (name, {options}) pair, not %r" % (what, item)) from None
    return name, dict(options)


class Scenario:
    """A scenario under construction (see the module's docs)."""

    def __init__(self, seed=None, until=None, **simulation):
        self._simulation = dict(simulation, seed=seed, until=until)
        self._networks = []
        self._topologies = []
        self._machines = []

    def network(self, id, ip=None, range=None, subnet=None, **options):
        """Adds ``[Network id=…]`` with its options (``type``,
        ``bandwidth``, ``latency``, ``loss``, ``queue``, ``qdisc``…) and
        its addresses: ``ip``, ``range`` (``'10.0.0.1-254'``) or
        ``subnet`` (``'10.0.0.0/24'``)."""
        addresses = {"ip": ip, "range": range, "subnet": subnet}
        self._networks.append((dict(options, id=id), addresses))
        return self

    def topology(self, type, **options):
        """Adds ``[Topology type=…]`` (``fattree``, ``dumbbell``, ``chain``,
        ``star``, ``tree``, ``torus2d``, ``torus3d``, ``graph``)."""
        self._topologies.append(dict(options, type=type))
        return self

    def machine(self, name, networks=(), protocols=(), applications=(), **options):
        """Adds ``[Machine name=…]`` with its options (``count``,
        ``forward``, ``gateway``, ``offload``…). ``networks``: ids, or
        ``(id, {'ip': …})`` pairs; ``protocols``: names (``'TCP'``) or
        ``(name, {options})``; ``applications``: ``(name, {options})``
        pairs."""
        self._machines.append(
            (
                dict(options, name=name),
                [_named(n, "network") for n in networks],
                [_named(p, "protocol") for p in protocols],
                [_named(a, "application") for a in applications],
            )
        )
        return self

    def ndl(self):
        """Returns the scenario as NDL text."""
        lines = []
        sim = {k: v for k, v in self._simulation.items() if v is not None}
        if sim:
            lines.append("[Simulation%s]" % _keys(sim))
        if self._networks:
            lines.append("[Networks]")
            for options, addresses in self._networks:
                head = _first("id", options)
                lines.append("\t[Network%s]" % _keys(head))
                if any(v is not None for v in addresses.values()):
                    lines.append("\t\t[IP%s]" % _keys(addresses))
        for t in self._topologies:
            lines.append("[Topology%s]" % _keys(_first("type", t)))
        if self._machines:
            lines.append("[Machines]")
        for options, networks, protocols, applications in self._machines:
            lines.append("\t[Machine%s]" % _keys(_first("name", options)))
            for section, keyword, key, items in (
                ("Networks", "Network", "id", networks),
                ("Protocols", "Protocol", "name", protocols),
                ("Applications", "Application", "name", applications),
            ):
                if items:
                    lines.append("\t\t[%s]" % section)
                for name, opts in items:
                    lines.append("\t\t\t[%s%s]" % (keyword, _keys(dict({key: name}, **opts))))
        return "\n".join(lines) + "\n"

    def run(self, **kwargs):
        """Runs the scenario (``elvis.run``'s keywords: ``seed``,
        ``until``, ``frames``) and returns its report."""
        from . import run

        return run(self.ndl(), **kwargs)
