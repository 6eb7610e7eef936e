"""A results row's weight format, from its `codebook` column (harness/weight_format.hpp): the
codebook name for kbit problems, "awq_g32" / "awq_g64" / "awq_g128" for AWQ ones (a peer may add
its own words after the format and a space). Standard library only: the tools, plot.py and the
peers' runner import it."""

AWQ_FORMATS = ("awq_g32", "awq_g64", "awq_g128")
WEIGHT_FORMATS = ("kbit",) + AWQ_FORMATS


def awq_format(codebook):
    """"awq_g128" etc. for an AWQ problem's codebook column, else None."""
    first = (codebook or "").split(" ")[0]
    return first if first in AWQ_FORMATS else None


def weight_format(row):
    """The row's weight format: "kbit" or "awq_g128" etc."""
    return awq_format(row.get("codebook")) or "kbit"
