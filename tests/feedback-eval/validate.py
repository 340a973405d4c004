#!/usr/bin/env python3
"""Validate a labelled feedback-memory contradiction set (stdlib only): every set of
tests/feedback-eval/ has this format (see a set's README).

Usage: python3 validate.py DIR
Exit status 0 when every file is clean, 1 otherwise."""
import glob
import json
import os
import re
import sys

LABELS = {"contradiction", "compatible", "different_scope", "unrelated"}
LANGS = {"en", "de", "fr", "es", "pt", "it", "nl", "zh", "ja", "ko", "pl", "sv", "tr", "mixed"}
KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
AREA = re.compile(r"^[a-z]+$")
TOP_KEYS = {"topic", "area", "lang", "private", "team", "labels"}
MEM_KEYS = {"id", "name", "description", "body"}
LAB_KEYS = {"private", "team", "label", "reason"}


def check_file(path):
    errs = []
    slug = os.path.basename(path)[:-5]
    if not KEBAB.match(slug):
        errs.append("file name is not a kebab-case slug")
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except Exception as e:  # noqa: BLE001
        return ["does not parse: %s" % e]
    if not isinstance(d, dict):
        return ["top level is not an object"]
    if set(d) != TOP_KEYS:
        errs.append("top-level keys %s != %s" % (sorted(d), sorted(TOP_KEYS)))
    for k in ("topic", "area"):
        if not isinstance(d.get(k), str) or not d.get(k, "").strip() or "\n" in d.get(k, ""):
            errs.append("%s must be a non-empty one-line string" % k)
    if isinstance(d.get("area"), str) and not AREA.match(d["area"]):
        errs.append("area %r is not a short lowercase word" % d["area"])
    if d.get("lang") not in LANGS:
        errs.append("invalid lang %r" % d.get("lang"))

    ids = set()
    sides = {}
    for side in ("private", "team"):
        mems = d.get(side)
        if not isinstance(mems, list) or not 1 <= len(mems) <= 4:
            errs.append("%s must hold 1-4 memories" % side)
            mems = mems if isinstance(mems, list) else []
        sides[side] = []
        names = set()
        for m in mems:
            if not isinstance(m, dict) or set(m) != MEM_KEYS:
                errs.append("%s memory has keys %s" % (side, sorted(m) if isinstance(m, dict) else m))
                continue
            mid, name = m["id"], m["name"]
            if not isinstance(mid, str) or not mid:
                errs.append("bad id %r" % mid)
                continue
            if mid in ids:
                errs.append("duplicate id %r" % mid)
            ids.add(mid)
            sides[side].append(mid)
            if not isinstance(name, str) or not name.isascii() or not KEBAB.match(name):
                errs.append("name %r of %s is not ASCII kebab-case" % (name, mid))
            if name in names:
                errs.append("duplicate name %r on %s side" % (name, side))
            names.add(name)
            desc, body = m["description"], m["body"]
            if not isinstance(desc, str) or not desc.strip() or "\n" in desc:
                errs.append("description of %s must be one non-empty line" % mid)
            if not isinstance(body, str) or not body.strip():
                errs.append("body of %s is empty" % mid)

    labels = d.get("labels")
    if not isinstance(labels, list):
        errs.append("labels is not a list")
        labels = []
    want = {(p, t) for p in sides.get("private", []) for t in sides.get("team", [])}
    seen = set()
    for l in labels:
        if not isinstance(l, dict) or set(l) != LAB_KEYS:
            errs.append("label entry has keys %s" % (sorted(l) if isinstance(l, dict) else l))
            continue
        pair = (l["private"], l["team"])
        if l["private"] not in sides.get("private", []):
            errs.append("label refers to unknown private id %r" % l["private"])
        if l["team"] not in sides.get("team", []):
            errs.append("label refers to unknown team id %r" % l["team"])
        if pair in seen:
            errs.append("duplicate label for %s" % (pair,))
        seen.add(pair)
        if l["label"] not in LABELS:
            errs.append("invalid label %r for %s" % (l["label"], pair))
        if not isinstance(l["reason"], str) or not l["reason"].strip() or "\n" in l["reason"]:
            errs.append("reason for %s must be one non-empty line" % (pair,))
    for pair in sorted(want - seen):
        errs.append("missing label for %s" % (pair,))
    for pair in sorted(seen - want):
        errs.append("label for pair outside the cross product %s" % (pair,))
    if slug.startswith("trap-"):
        for l in labels:
            if isinstance(l, dict) and l.get("label") != "unrelated":
                errs.append("trap pair %s is not 'unrelated'" % ((l.get("private"), l.get("team")),))
    return errs


def main():
    if len(sys.argv) != 2:
        print("usage: python3 validate.py DIR (a set of tests/feedback-eval/, e.g. dev4)")
        return 2
    root = sys.argv[1]
    files = sorted(glob.glob(os.path.join(root, "*.json")))
    if not files:
        print("no JSON files found in", root)
        return 1
    bad = 0
    pairs = 0
    for path in files:
        errs = check_file(path)
        if errs:
            bad += 1
            for e in errs:
                print("%s: %s" % (os.path.basename(path), e))
        else:
            pairs += len(json.load(open(path, encoding="utf-8"))["labels"])
    if bad:
        print("FAILED: %d of %d files have problems" % (bad, len(files)))
        return 1
    print("OK: %d files, %d labelled pairs, all checks passed" % (len(files), pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
