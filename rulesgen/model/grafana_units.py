"""Grafana's unit ids, the units a panel may carry, and the catalog units drawn through one of them.

No Grafana runs here: the ids are Grafana's published list, getCategories() in grafana/grafana
packages/grafana-data/src/valueFormats/categories.ts (read at commit ed1aac226b3b, Grafana 11; the
Boolean category, `masslb`, `lengthin` and the per-minute throughputs are 8.x-11.x additions). Grafana
draws an id it does not know as a bare suffix ("1410 rotmhz") and grafana/dashboard-linter's
panel-units-rule rejects it, so the catalog loader (signals.yaml, baselines.yaml units) and `rulesgen
lint`'s panel-unit check accept these ids only, and the catalog units of CONVERTED.

Data only: the catalog loader and the dashboard builders read it.
"""
from __future__ import annotations

UNIT_IDS = frozenset({
    # Misc
    "none", "string", "short", "percent", "percentunit", "humidity", "dB", "hex0x", "hex", "sci", "locale", "pixel",
    # Acceleration, Angle, Area
    "accMS2", "accFS2", "accG", "degree", "radian", "grad", "arcmin", "arcsec", "areaM2", "areaF2", "areaMI2",
    # Computation
    "flops", "mflops", "gflops", "tflops", "pflops", "eflops", "zflops", "yflops",
    # Concentration
    "ppm", "conppb", "conngm3", "conngNm3", "con\u03bcgm3", "con\u03bcgNm3", "conmgm3", "conmgNm3", "congm3", "congNm3",
    "conmgdL", "conmmolL",
    # Currency
    "currencyUSD", "currencyGBP", "currencyEUR", "currencyJPY", "currencyRUB", "currencyUAH", "currencyBRL",
    "currencyDKK", "currencyISK", "currencyNOK", "currencySEK", "currencyCZK", "currencyCHF", "currencyPLN",
    "currencyBTC", "currencymBTC", "currency\u03bcBTC", "currencyZAR", "currencyINR", "currencyKRW", "currencyIDR",
    "currencyPHP", "currencyVND", "currencyTRY",
    # Data
    "bytes", "decbytes", "bits", "decbits", "kbytes", "deckbytes", "mbytes", "decmbytes", "gbytes", "decgbytes",
    "tbytes", "dectbytes", "pbytes", "decpbytes",
    # Data rate
    "pps", "binBps", "Bps", "binbps", "bps", "KiBs", "Kibits", "KBs", "Kbits", "MiBs", "Mibits", "MBs", "Mbits",
    "GiBs", "Gibits", "GBs", "Gbits", "TiBs", "Tibits", "TBs", "Tbits", "PiBs", "Pibits", "PBs", "Pbits",
    # Date & time
    "dateTimeAsIso", "dateTimeAsIsoNoDateIfToday", "dateTimeAsUS", "dateTimeAsUSNoDateIfToday", "dateTimeAsLocal",
    "dateTimeAsLocalNoDateIfToday", "dateTimeAsSystem", "dateTimeFromNow",
    # Energy
    "watt", "kwatt", "megwatt", "gwatt", "mwatt", "Wm2", "voltamp", "kvoltamp", "voltampreact", "kvoltampreact",
    "watth", "watthperkg", "kwatth", "kwattm", "amph", "kamph", "mamph", "joule", "ev", "amp", "kamp", "mamp", "volt",
    "kvolt", "mvolt", "dBm", "ohm", "kohm", "Mohm", "farad", "\u00b5farad", "nfarad", "pfarad", "ffarad", "henry",
    "mhenry", "\u00b5henry", "lumens",
    # Flow, Force
    "flowgpm", "flowcms", "flowcfs", "flowcfm", "litreh", "flowlpm", "flowmlpm", "lux",
    "forceNm", "forcekNm", "forceN", "forcekN",
    # Hash rate, Mass, Length
    "Hs", "KHs", "MHs", "GHs", "THs", "PHs", "EHs", "massmg", "massg", "masslb", "masskg", "masst",
    "lengthmm", "lengthin", "lengthft", "lengthm", "lengthkm", "lengthmi",
    # Pressure, Radiation
    "pressurembar", "pressurebar", "pressurekbar", "pressurepa", "pressurehpa", "pressurekpa", "pressurehg",
    "pressurepsi", "radbq", "radci", "radgy", "radrad", "radsv", "radmsv", "radusv", "radrem", "radexpckg", "radr",
    "radsvh", "radmsvh", "radusvh",
    # Rotational speed (rothz is hertz: there is no MHz id), Temperature
    "rotrpm", "rothz", "rotrads", "rotdegs", "celsius", "fahrenheit", "kelvin",
    # Time
    "hertz", "ns", "\u00b5s", "ms", "s", "m", "h", "d", "dtdurationms", "dtdurations", "dthms", "dtdhms", "timeticks",
    "clockms", "clocks",
    # Throughput
    "cps", "ops", "reqps", "rps", "wps", "iops", "eps", "mps", "recps", "rowsps", "cpm", "opm", "reqpm", "rpm", "wpm",
    "epm", "mpm", "recpm", "rowspm",
    # Velocity, Volume, Boolean
    "velocityms", "velocitykmh", "velocitymph", "velocityknot", "mlitre", "litre", "m3", "Nm3", "dm3", "gallons",
    "bool", "bool_yes_no", "bool_on_off",
})

# Catalog units Grafana has no id for, drawn through one that it has: unit -> (Grafana id, factor the values
# are multiplied by). Grafana's hertz scales with SI prefixes, so 1410 MHz x 1e6 shows as "1.41 GHz".
CONVERTED = {"MHz": ("hertz", 1_000_000)}


def is_known(unit: str) -> bool:
    """A unit a catalog signal may carry: a Grafana id, or one of CONVERTED."""
    return unit in UNIT_IDS or unit in CONVERTED


def display(unit: str) -> tuple[str, float]:
    """(Grafana unit id, factor) a panel draws a catalog unit with."""
    return CONVERTED.get(unit, (unit, 1))
