"""Request bodies validated by the serializers that document them (STYLE.md "Seams": HackSoft's input serializers).

A view builds its body's `InputSerializer` and calls `is_valid(raise_exception=True)`: the first fault, field by
field, is raised as the API's error (reviews/api_errors.py) in the words the API has always used for bad input:
"<field>: <what is wrong>", code `invalid`, details {"field": <field>}. A serializer gives a field one sentence
for every fault (`messages`), builds a field's whole error itself (`refusal`), or raises an ApiError, or a
service's refusal its view maps, from a validate_<field> method or validate() (another status, code or details).

The fields below take values as sent, as the API always has: DRF's own would turn 12 into "12" and "3" into 3,
read a list from a form's repeated keys, strip whitespace and refuse NUL or surrogate characters in words of
their own, where a wrong type is refused here and what a well-typed value holds is its service's to judge.
"""
from __future__ import annotations

from collections.abc import Mapping

from django.core.validators import MaxLengthValidator, ProhibitNullCharactersValidator
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import SkipField, empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from .api_errors import ApiError, error_message
from .free_text import MAX_TEXT_CHARS, too_long


class InputSerializer(serializers.Serializer):
    # A request body's serializer that validates it as well as documenting it (the module's docstring); no
    # docstring of its own, which drf-spectacular would print as the description of every body without one.
    # {field: what the API says, whatever is wrong with it}; other fields say DRF's words (or their error_messages).
    messages: dict[str, str] = {}
    # Fields checked before the others, in this order (the order the API names faults in); then the rest as declared.
    checked_first: tuple[str, ...] = ()
    not_an_object = "the body must be a JSON object"

    def run_validation(self, data=empty):
        if not isinstance(data, Mapping):
            raise ApiError(self.not_an_object, code="invalid_body")
        return super().run_validation(data)

    def to_internal_value(self, data):
        """The body's values; the first field at fault is refused (DRF's would name every field at fault)."""
        order = self.checked_first
        values = {}
        for field in sorted(self._writable_fields, key=lambda f: order.index(f.field_name)
                            if f.field_name in order else len(order)):
            check = getattr(self, f"validate_{field.field_name}", None)
            try:
                value = field.run_validation(field.get_value(data))
                if check is not None:
                    value = check(value)
            except SkipField:
                continue
            except ValidationError as fault:
                raise self.refusal(field.field_name, fault.detail) from None
            self.set_value(values, field.source_attrs, value)
        return values

    def refusal(self, name: str, detail) -> ApiError:
        """The API's error for the field `name` that failed with DRF's `detail`."""
        return ApiError(f"{name}: {self.messages.get(name) or error_message(detail)}", code="invalid",
                        details={"field": name})


class AsSent:
    """A field that reads its value as sent, a form's as a JSON body's (no list from repeated keys, no '' as absent)."""

    def get_value(self, dictionary):
        return dictionary.get(self.field_name, empty)


class TextField(AsSent, serializers.CharField):
    """A string as sent: whitespace kept, NUL and surrogate characters left to the service; no other type."""

    default_error_messages = {"invalid": "must be a string"}

    def __init__(self, **kwargs):
        super().__init__(**{"trim_whitespace": False} | kwargs)
        self.validators = [check for check in self.validators if not isinstance(
            check, (ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator))]

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", type=type(data).__name__)
        return data


class WholeNumberField(AsSent, serializers.IntegerField):
    """A JSON integer: not a boolean, a string of digits or a float."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return data


class ListField(AsSent, serializers.ListField):
    """A JSON array (a form's field is a string, never a list)."""


class TextLimit(MaxLengthValidator):
    """A field's validator for free text a caller writes: the one limit (reviews.free_text), counted on the text as
    stripped (as its service stores it) and refused in the API's words for a field whatever the serializer
    ("<field>: N characters; …", code `invalid`, details {"field": <field>}); the schema shows it as maxLength."""

    requires_context = True

    def __init__(self):
        super().__init__(MAX_TEXT_CHARS)

    def __call__(self, value, field):
        refusal = too_long(field.field_name, value.strip())
        if refusal:
            raise ApiError(refusal, code="invalid", details={"field": field.field_name})
