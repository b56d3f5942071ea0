from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiToken, hash_token


class HashedTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>`, looked up by the key's SHA-256; revoked tokens fail."""

    keyword = "Token"

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
