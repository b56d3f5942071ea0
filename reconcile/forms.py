"""Forms of the reconciliation page: they check the shape of a reviewer's input, nothing more."""
from django import forms

from records.ids import KINDS


class DecisionForm(forms.Form):
    """One decision on a mapping or an integration issue (accept, reject, reopen)."""

    DECISIONS = [("accept", "accept"), ("reject", "reject"), ("reopen", "reopen")]

    decision = forms.ChoiceField(choices=DECISIONS)
    rationale = forms.CharField(required=False, max_length=5000, strip=True)
    version = forms.IntegerField(min_value=1)
    # Only mappings have a target; an empty value keeps the mapping's own.
    target = forms.CharField(required=False, max_length=120, strip=True)

    def clean(self):
        data = super().clean()
        if data.get("decision") == "reject" and not data.get("rationale"):
            self.add_error("rationale", "A rejection needs a rationale: say why.")
        return data

    def problem(self) -> str:
        """The form's errors as one sentence for the row's message."""
        return " ".join(f"{message}" if name == "__all__" else f"{name}: {message}"
                        for name, messages in self.errors.items() for message in messages)


class BulkAcceptForm(forms.Form):
    min_score = forms.FloatField(min_value=0.0, max_value=1.0, initial=0.9)
    rationale = forms.CharField(required=False, max_length=5000, strip=True)

    def rationale_or_default(self) -> str:
        return self.cleaned_data["rationale"] or (
            f"Bulk accept of the app's suggestions scoring at least {self.cleaned_data['min_score']:.2f}."
        )


class PageFilterForm(forms.Form):
    """The page's GET filters; unknown values fall back to the defaults instead of failing."""

    SHOW = [("all", "all"), ("undecided", "undecided"), ("stale", "stale"), ("conflicts", "conflicts")]

    member = forms.CharField(required=False, max_length=40)
    kind = forms.ChoiceField(required=False, choices=[("", "any")] + [(k, k) for k in KINDS])
    show = forms.ChoiceField(required=False, choices=SHOW)

    def value(self, name: str) -> str:
        if self.is_valid():
            return self.cleaned_data.get(name) or ""
        return "" if name in self.errors else (self.data.get(name) or "")
