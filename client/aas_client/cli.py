"""`aas`: the commands an analyst agent runs (DESIGN.md §13).

Exit codes: 0 done, 1 findings or a refusal (the server's message is printed), 2 usage,
3 server unreachable. `--json` prints machine output on stdout; progress goes to stderr.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from .http import Api, ApiRefusal, Part, Unreachable

DONE, REFUSED, USAGE, UNREACHABLE = 0, 1, 2, 3
# How far a run has come: `wait --until in_review` is also done once it is past review.
PROGRESS = {"open": 0, "validating": 0, "failed": 0, "in_review": 1, "approved": 2, "finalizing": 2, "final": 3}
ANSWERS_SUFFIX = "-answers.md"


class Usage(Exception):
    pass


def config_path() -> Path:
    return Path(os.environ.get("AAS_CONFIG") or Path.home() / ".config" / "aas" / "config.json")


def api_from_config() -> Api:
    url, token = os.environ.get("AAS_URL"), os.environ.get("AAS_TOKEN")
    if not (url and token):
        try:
            saved = json.loads(config_path().read_text())
        except (OSError, ValueError):
            raise Usage("not logged in: run `aas login URL TOKEN` first (or set AAS_URL and AAS_TOKEN)") from None
        url, token = url or saved["url"], token or saved["token"]
    return Api(url, token)


def out(args, data, lines) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        for line in lines:
            print(line)


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_login(args) -> int:
    api = Api(args.url, args.token)
    who = api.get("/api/whoami/")
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": args.url, "token": args.token}))
    path.chmod(0o600)
    out(args, who, [f"logged in to {args.url} as {who['username']} ({', '.join(who['roles'])})"])
    return DONE


def _member_files(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.iterdir() if p.is_file() and p.suffix == ".md"
                  and not p.name.endswith(ANSWERS_SUFFIX))


def _zipped(run_dir: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in run_dir.iterdir() if p.is_file()):
            archive.write(path, f"{run_dir.name}/{path.name}")
    return buffer.getvalue()


def cmd_push(args) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "ARTIFACT.yaml").is_file():
        raise Usage(f"{run_dir} is not a run directory (no ARTIFACT.yaml)")
    api = api_from_config()
    files = _member_files(run_dir)
    note(f"importing {run_dir.name}: {len(files)} members")
    try:
        _status, body = api.request("POST", "/api/runs/import/", form={"file": Part(f"{run_dir.name}.zip",
                                                                                     _zipped(run_dir))})
        run_id, members = body["run"]["run_id"], body["members"]
        for n, member in enumerate(members, 1):
            note(f"[{n}/{len(members)}] {member.get('filename', member['role'])} imported")
    except ApiRefusal as refusal:
        if refusal.code != "run_exists":
            raise
        run_id, members = run_dir.name, []
        note(f"{run_id} exists: uploading each member")
        for n, path in enumerate(files, 1):
            form = {"role": path.stem, "file": Part(path.name, path.read_bytes())}
            answers = path.with_name(path.stem + ANSWERS_SUFFIX)
            if answers.is_file():
                form["answers"] = answers.read_text(encoding="utf-8")
            status, member = api.request("POST", f"/api/runs/{run_id}/members/", form=form)
            members.append(member)
            note(f"[{n}/{len(files)}] {path.name} {'unchanged' if status == 200 else 'uploaded'}")
    out(args, {"run_id": run_id, "members": members},
        [f"{run_id}"] + [f"  {m['role']:<24} v{m['version']}  sha256:{m['sha256']}" for m in members])
    return DONE


def cmd_status(args) -> int:
    run = api_from_config().get(f"/api/runs/{args.run}/")
    lines = [f"{run['run_id']}  {run['status']}" + (f"  ({run['status_reason']})" if run.get("status_reason") else "")]
    lines += [f"  {m['role']:<24} v{m['version']}  {m['status']}" for m in run.get("members", [])]
    out(args, run, lines)
    return DONE


def _feed_end(api: Api, run: str) -> str:
    cursor = ""
    while True:
        page = api.get("/api/events/", run=run, after=cursor, limit=500)
        cursor = page["next"]
        if not page["has_more"]:
            return cursor


def cmd_wait(args) -> int:
    """Follow /api/events/ for the run until it reaches `--until`: the feed's end is taken first and the
    run's status read after it, so an event is either reflected in that status or comes after the cursor."""
    api = api_from_config()
    goal, deadline = PROGRESS[args.until], time.monotonic() + args.timeout
    cursor = _feed_end(api, args.run)
    run = api.get(f"/api/runs/{args.run}/")
    if PROGRESS.get(run["status"], 0) >= goal:
        out(args, {"run_id": args.run, "status": run["status"]}, [f"{args.run} is {run['status']}"])
        return DONE
    pause = 0.2
    while time.monotonic() < deadline:
        page = api.get("/api/events/", run=args.run, after=cursor, limit=500)
        cursor = page["next"]
        for event in page["events"]:
            if event["type"] == "run.failed":
                reason = ((event["data"].get("after") or {}).get("run_status") or {}).get("reason", "")
                note(f"{args.run} failed{': ' + reason if reason else ''}")
                out(args, {"run_id": args.run, "status": "failed", "event": event}, [])
                return REFUSED
            if event["type"] == f"run.{args.until}" or (args.until == "in_review" and event["type"] == "run.approved"):
                out(args, {"run_id": args.run, "status": args.until, "event": event}, [f"{args.run} is {args.until}"])
                return DONE
        if page["events"]:
            pause = 0.2
        elif not page["has_more"]:
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 1.5, 2.0)
    note(f"{args.run} did not reach {args.until} within {args.timeout:g}s")
    return REFUSED


def cmd_findings(args) -> int:
    report = api_from_config().get(f"/api/runs/{args.run}/validation/")
    findings = report.get("findings", [])
    lines = [f"{f['severity']:<7} {f['code']:<28} {f.get('member') or '-'}:{f.get('line') or '-'} "
             f"{f.get('record_id') or ''} {f['message']}" for f in findings]
    errors = sum(1 for f in findings if f["severity"] == "error")
    out(args, report, lines + [f"{errors} errors, {len(findings) - errors} warnings"])
    return REFUSED if errors else DONE


def cmd_corrections(args) -> int:
    body = api_from_config().get(f"/api/runs/{args.run}/corrections/", addressed_to_me=1 if args.mine else None)
    items = body["results"] if isinstance(body, dict) and "results" in body else body
    out(args, items, [f"#{c['id']:<5} {c['state']:<10} {c['member']} {c.get('record') or ''}: {c['text']}"
                      for c in items] or ["no correction requests"])
    return DONE


def cmd_answer(args) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise Usage(f"{path} is not a file")
    form = {"role": args.member, "file": Part(path.name, path.read_bytes())}
    if args.answers:
        form["answers"] = Path(args.answers).read_text(encoding="utf-8")
    status, member = api_from_config().request("POST", f"/api/runs/{args.run}/members/", form=form)
    out(args, member, [f"{args.run} {member['role']} v{member['version']} sha256:{member['sha256']}"
                       + (" (unchanged)" if status == 200 else "")])
    return DONE


def cmd_verify(args) -> int:
    """aas_verify's check and exit code (0 verified against a key you trust, 1 a check failed, 2 no trusted key
    given or the bundle or key cannot be read)."""
    # Run as a program, not imported: the client stays apart from every package of the server's tree.
    if importlib.util.find_spec("aas_verify") is None:
        raise Usage("the offline verifier is not installed: pip install ./aas_verify")
    command = [sys.executable, "-m", "aas_verify", args.bundle] + [a for k in args.key for a in ("--key", k)]
    command += [a for pin in args.key_fingerprint for a in ("--key-fingerprint", pin)]
    command += ["--json"] if args.json else []
    return subprocess.run(command, check=False).returncode


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="aas", description="The analyst agent's client of the review app.")
    top.add_argument("--json", action="store_true", help="machine output on stdout")
    sub = top.add_subparsers(dest="command", required=True)
    login = sub.add_parser("login", help="check a token and keep it")
    login.add_argument("url")
    login.add_argument("token")
    sub.add_parser("push", help="create or import a run from its directory").add_argument("run_dir")
    sub.add_parser("status", help="a run's status and members").add_argument("run")
    wait = sub.add_parser("wait", help="follow the event feed until the run is in review or final")
    wait.add_argument("run")
    wait.add_argument("--until", choices=["in_review", "final"], required=True)
    wait.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    sub.add_parser("findings", help="the run's validation findings (exit 1 on errors)").add_argument("run")
    corrections = sub.add_parser("corrections", help="the run's correction requests")
    corrections.add_argument("run")
    corrections.add_argument("--mine", action="store_true", help="only those addressed to me")
    answer = sub.add_parser("answer", help="upload a corrected member version with its answers")
    answer.add_argument("run")
    answer.add_argument("member")
    answer.add_argument("file")
    answer.add_argument("--answers", help="the answers file (`- corrected: …` / `- declined: …` lines)")
    verify = sub.add_parser("verify", help="verify an exported bundle offline against a key you trust (aas_verify)")
    verify.add_argument("bundle")
    verify.add_argument("--key", action="append", default=[], metavar="FILE",
                        help="a key obtained out of band: a PEM, or the keys document of GET /api/keys/; repeatable")
    verify.add_argument("--key-fingerprint", action="append", default=[], metavar="SHA256",
                        help="the SHA-256 of the raw Ed25519 public key, pinned out of band; repeatable")
    for command in sub.choices.values():
        command.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine output")
    return top


COMMANDS = {"login": cmd_login, "push": cmd_push, "status": cmd_status, "wait": cmd_wait, "findings": cmd_findings,
            "corrections": cmd_corrections, "answer": cmd_answer, "verify": cmd_verify}


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:
        return USAGE if exit_.code else DONE
    try:
        return COMMANDS[args.command](args)
    except Usage as problem:
        note(f"aas: {problem}")
        return USAGE
    except ApiRefusal as refusal:
        note(f"aas: {refusal}")
        if args.json:
            print(json.dumps({"error": {"status": refusal.status, "code": refusal.code, "message": refusal.message,
                                        "details": refusal.details}}))
        return REFUSED
    except Unreachable as down:
        note(f"aas: {down}")
        return UNREACHABLE


if __name__ == "__main__":
    sys.exit(main())
