"""`{% pair_row %}`: the context's `row` rendered with `reconcile/_pair_row.html`, as `{% include %}` would,
from the template's skeleton for rows of its shape rather than node by node.

A row is a flat dict of some forty values (PairRow.display); the template engine resolving and printing
them one node at a time was most of a row's rendering (~0.1 ms), and 60 rows are one page. The template
stays the one place a row's markup is written: for each shape of row (its keys, which of its values are
set and of what type, and the values the template compares, such as `row.side`) the template is rendered once with
stand-ins in place of the values, and its output cut at the stand-ins; each row of that shape is then those
pieces with its own values between them, each printed as the engine prints a value.

A stand-in is true or false as its value is and compares as its value does, noting that the template
compared it: a compared value becomes part of the shape (the skeletons made without it are dropped). A
value the template would pass through a filter, loop over or look into could not be stood in for:
`display()` gives the template finished values, and a row holding anything but text, numbers and empty
lists (its quotations, rendered through an include of their own) is rendered by the template itself, and
a skeleton serves only rows whose values have the types it was made with. tests/reconcile/test_pair_rows.py
holds this path to `{% include %}`'s output, byte for byte.
"""
from __future__ import annotations

import re
import secrets
import weakref

from django import template
from django.template.base import render_value_in_context
from django.utils.safestring import SafeString

register = template.Library()

ROW_TEMPLATE = "reconcile/_pair_row.html"
# What `_pair_row.html` reads besides `row`: the same for every row of a page.
PAGE_NAMES = ("can_decide", "correction_base", "csrf_input")

# A stand-in prints as this marker: no template text holds it (drawn per process), and row values are
# never searched for it (they go between the pieces, not through them).
_TOKEN = secrets.token_hex(8)
_MARKER = re.compile(f"\x00{_TOKEN}:(\\d+)\x00")
_MISSING = object()
_MAX_SKELETONS = 512  # per set of row keys; a few dozen shapes occur


class _StandIn(SafeString):
    """One value of a row while its skeleton is rendered."""

    def __new__(cls, slot: int, value, compared: set):
        self = super().__new__(cls, f"\x00{_TOKEN}:{slot}\x00")
        self.value, self.slot, self.compared = value, slot, compared
        return self

    def _noted(self):
        self.compared.add(self.slot)
        return self.value

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self._noted() == other

    def __ne__(self, other):
        return self._noted() != other

    def __lt__(self, other):
        return self._noted() < other

    def __le__(self, other):
        return self._noted() <= other

    def __gt__(self, other):
        return self._noted() > other

    def __ge__(self, other):
        return self._noted() >= other

    def __contains__(self, item):
        return item in self._noted()

    __hash__ = str.__hash__


class _Shapes:
    """The skeletons of one template for rows with one set of keys."""

    def __init__(self):
        self.compared: tuple[int, ...] = ()  # the slots the template compares
        self.skeletons: dict[tuple, tuple[list[str], list[int]] | None] = {}  # _shape → cut template


_BY_TEMPLATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a template reloaded starts afresh


def _flat(value) -> bool:
    """Whether a stand-in can take `value`'s place: text, a number, a truth value or None (an empty list or
    tuple goes into the skeleton as itself). Anything else may be looked into by the template."""
    return value is None or isinstance(value, (str, int, float)) or (type(value) in (list, tuple) and not value)


def _shape(values: list, shapes: _Shapes) -> tuple:
    """Which skeleton a row's values take: their types and truth, and the values the template compares."""
    return (*map(type, values), *map(bool, values), *(values[n] for n in shapes.compared))


def _skeleton(row_template, context, keys: tuple, page: tuple, values: list, shapes: _Shapes) -> tuple | None:
    """The row template rendered with stand-ins, cut into (pieces, slots): pieces[0], values[slots[0]],
    pieces[1], …; None when the row cannot be stood in for (a value not `_flat`, such as its quotations)."""
    if not all(map(_flat, values)):
        return None
    compared: set[int] = set()
    stand_ins = [v if type(v) in (list, tuple) else _StandIn(n, v, compared) for n, v in enumerate(values)]
    text = row_template.render(context.new({"row": dict(zip(keys, stand_ins)),
                                            **dict(zip(page, stand_ins[len(keys):]))}))
    cut = _MARKER.split(text)
    pieces, slots = cut[0::2], [int(slot) for slot in cut[1::2]]
    if any("\x00" in piece for piece in pieces):  # a stand-in printed other than whole (through a filter)
        raise template.TemplateSyntaxError(f"{ROW_TEMPLATE} changes a row value as it prints it: "
                                           "give it the finished value (PairRow.display)")
    if not compared <= set(shapes.compared):
        # The template compares a value no shape held yet: from now on it is part of the shape.
        shapes.compared = tuple(sorted(set(shapes.compared) | compared))
        shapes.skeletons.clear()
    return pieces, slots


def render_pair_row(row_template, context, row: dict, by_keys: dict | None = None) -> SafeString:
    """`row` as `row_template` renders it in `context` (which holds it as `row`); `by_keys`: the template's
    skeletons (`skeletons_of`), when the caller holds them."""
    found = [context.get(name, _MISSING) for name in PAGE_NAMES]
    # A page name the context lacks prints as the engine prints a missing variable: it is left out.
    page = PAGE_NAMES if _MISSING not in found else tuple(n for n, v in zip(PAGE_NAMES, found) if v is not _MISSING)
    keys = (tuple(row), page)
    values = [*row.values(), *(v for v in found if v is not _MISSING)]
    if by_keys is None:
        by_keys = skeletons_of(row_template)
    shapes = by_keys.get(keys)
    if shapes is None:
        shapes = by_keys[keys] = _Shapes()
    try:
        skeleton = shapes.skeletons.get(_shape(values, shapes), _MISSING)
    except TypeError:  # a compared value that is not hashable: no skeleton for it
        skeleton = None
    if skeleton is _MISSING:
        skeleton = _skeleton(row_template, context, keys[0], page, values, shapes)
        if len(shapes.skeletons) >= _MAX_SKELETONS:
            shapes.skeletons.clear()
        shapes.skeletons[_shape(values, shapes)] = skeleton
    if skeleton is None:
        return row_template.render(context)
    pieces, slots = skeleton
    out = [""] * (len(pieces) + len(slots))  # pieces[0], a value, pieces[1], …, pieces[-1]
    out[0::2] = pieces
    out[1::2] = [v if type(v) is SafeString else render_value_in_context(v, context)
                 for v in map(values.__getitem__, slots)]
    return SafeString("".join(out))


def skeletons_of(row_template) -> dict:
    """{(row keys, page names): _Shapes} of one row template."""
    found = _BY_TEMPLATE.get(row_template)
    if found is None:
        found = _BY_TEMPLATE[row_template] = {}
    return found


class PairRowNode(template.Node):
    def render(self, context):
        cache = context.render_context.dicts[0]
        held = cache.get(self)
        if held is None:
            row_template = context.template.engine.get_template(ROW_TEMPLATE)
            held = cache[self] = (row_template, skeletons_of(row_template))
        return render_pair_row(held[0], context, context["row"], held[1])


@register.tag
def pair_row(parser, token):
    """`{% pair_row %}`: the context's `row`, as `{% include "reconcile/_pair_row.html" %}` renders it."""
    if len(token.split_contents()) != 1:
        raise template.TemplateSyntaxError("{% pair_row %} takes no arguments: it renders the context's `row`")
    return PairRowNode()
