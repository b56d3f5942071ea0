from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiToken, hash_token


class HashedTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>`, looked up by the key's SHA-256; revoked tokens fail."""

    keyword = "Token"

    def authenticate(self, request):
        # Another scheme (`Bearer …`, `Basic …`) would otherwise be read as no credentials at all and get
        # the same 401 as a missing header: say which scheme this API takes (issue 22).
        # `Basic` is left alone: a proxy in front of the app may use it, and the session still authenticates.
        header = authentication.get_authorization_header(request).split()
        if header and header[0].lower() not in (self.keyword.lower().encode(), b"basic"):
            scheme = header[0].decode("latin-1", "replace")[:20]
            raise exceptions.AuthenticationFailed(
                f"The {scheme!r} authorization scheme is not accepted: send `Authorization: Token <key>`.")
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        # Looked up by the key's SHA-256: timing of the lookup can reveal only a hash, never the key.
        try:  # get(), not first(): the hash is unique, so no ORDER BY to build on every request
            token = ApiToken.objects.select_related("user").get(key_sha256=hash_token(key))
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        if not token.is_active:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return (token.user, token)
