"""The rows of a results.csv timed at a throttled SM clock, as harness/results.cpp's
low_clock_rows judges them (the run prints them after its summary): a row whose lower nonzero
reading of sm_mhz_before / sm_mhz_after is below FRACTION of the highest reading of any row."""

FRACTION = 0.9


def reading(value):
    try:
        return float(value or 0)
    except ValueError:
        return 0.0


def lower_clock(row):
    """A row's lower nonzero clock reading in MHz, 0 without one."""
    b, a = reading(row.get("sm_mhz_before")), reading(row.get("sm_mhz_after"))
    return min(b, a) if b > 0 and a > 0 else max(b, a)


def highest_clock(rows):
    return max([reading(r.get(c)) for r in rows for c in ("sm_mhz_before", "sm_mhz_after")],
               default=0.0)


def low_clock(rows, fraction=FRACTION):
    """The indices of the rows timed below fraction of the run's highest clock."""
    top = highest_clock(rows)
    return {i for i, r in enumerate(rows) if 0 < lower_clock(r) < fraction * top}
