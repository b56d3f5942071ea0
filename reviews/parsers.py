"""The API's JSON parser: DRF's, with nesting too deep for Python's parser refused as bad input."""
from __future__ import annotations

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None


def refuse_repeated_fields(data, files=None) -> None:
    """A form field or file part sent twice (`role=memory&role=runtime`) is a 400, never last-one-wins."""
    # The same value twice is no ambiguity (some generated clients send each multipart field so); two
    # different values, or two file parts under one name, are.
    repeated = sorted({key for key, values in data.lists() if len(set(map(str, values))) > 1} |
                      ({key for key, values in files.lists() if len(values) > 1} if files is not None else set()))
    if repeated:
        from .api_errors import (
            ApiError,  # api_errors imports the audit module; parsers load with the settings
        )

        raise ApiError(f"{', '.join(repeated)}: sent more than once; send each field once",
                       code="repeated_field", details={"fields": repeated})


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        refuse_repeated_fields(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        refuse_repeated_fields(result.data, result.files)
        return result
