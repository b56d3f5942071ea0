"""Forms of the reconciliation page: they check the shape of a reviewer's input, nothing more
(what a decision needs, such as a rejection's rationale, is the service's to say)."""
from django import forms

from records.ids import KINDS

from . import services
from .models import Mapping


class DecisionForm(forms.Form):
    """One decision on a mapping or an integration issue (accept, reject, reopen)."""

    DECISIONS = [(decision, decision) for decision in services.DECISIONS]

    decision = forms.ChoiceField(choices=DECISIONS)
    rationale = forms.CharField(required=False, strip=True)  # its limit is the service's (reviews.free_text)
    version = forms.IntegerField(min_value=1)
    # Only mappings have a target; an empty value keeps the mapping's own.
    target = forms.CharField(required=False, max_length=120, strip=True)

    def problem(self) -> str:
        """The form's errors as one sentence for the row's message."""
        return " ".join(f"{message}" if name == "__all__" else f"{name}: {message}"
                        for name, messages in self.errors.items() for message in messages)


class BulkAcceptForm(forms.Form):
    min_score = forms.FloatField(min_value=0.0, max_value=1.0, initial=0.9)
    rationale = forms.CharField(required=False, strip=True)  # its limit is the service's (reviews.free_text)

    def rationale_or_default(self) -> str:
        return self.cleaned_data["rationale"] or (
            f"Bulk accept of the app's suggestions scoring at least {self.cleaned_data['min_score']:.2f}."
        )


class PageFilterForm(forms.Form):
    """The page's GET filters; unknown values fall back to the defaults instead of failing."""

    SHOW = [("all", "all"), ("undecided", "undecided"), ("stale", "stale"), ("conflicts", "conflicts")]
    # Integration issues of the member picked ("") or of every member ("all").
    ISSUES = [("", "the selected member"), ("all", "all members")]

    member = forms.CharField(required=False, max_length=40)
    kind = forms.ChoiceField(required=False, choices=[("", "any")] + [(k, k) for k in KINDS])
    show = forms.ChoiceField(required=False, choices=SHOW)
    issues = forms.ChoiceField(required=False, choices=ISSUES)

    def value(self, name: str) -> str:
        if self.is_valid():
            return self.cleaned_data.get(name) or ""
        return "" if name in self.errors else (self.data.get(name) or "")


class ProposeForm(forms.Form):
    """Another mapping for one member record, proposed from its row (same rules as the API's)."""

    RELATIONS = [(relation, relation) for relation in Mapping.Relation.values]

    relation = forms.ChoiceField(choices=RELATIONS)
    target = forms.CharField(required=False, max_length=120, strip=True)

    problem = DecisionForm.problem


class RejectCanonicalForm(forms.Form):
    """Taking a canonical record out of the shared set: the reason is required."""

    rationale = forms.CharField(strip=True,  # its limit is the service's (reviews.free_text)
                                error_messages={"required": "Rejecting a record needs a rationale: say why."})
    # The row the form was posted from, re-rendered in the answer.
    mapping = forms.IntegerField(required=False, min_value=1)
    # The accepted mappings onto the record that the form warned about ("3,7"): the reviewer confirmed
    # rejecting it knowing them. Empty: the form showed none.
    acknowledged = forms.CharField(required=False, max_length=5000)

    def acknowledged_pks(self) -> set[int]:
        return {int(pk) for pk in (self.cleaned_data.get("acknowledged") or "").split(",") if pk.strip().isdigit()}

    def problem(self) -> str:
        return " ".join(message for messages in self.errors.values() for message in messages)


class AmendmentDecisionForm(DecisionForm):
    """One decision on an amendment or unresolved conflict: also `carry` it into the result's Limitations."""

    DECISIONS = [(decision, decision) for decision in services.AMENDMENT_DECISIONS]

    decision = forms.ChoiceField(choices=DECISIONS)
