#!/usr/bin/env python3
"""Builds Cleave's two extreme-classification tasks from Debian packages.

    python3 training/data/build_xc_datasets.py [--out DIR] [--slice K] [TASK ...]

TASK is gcide-nextword, spell-670k or both (the default). Each task is
written to DIR/TASK/ (DIR defaults to build/xc-data) as train.txt and
test.txt in the XMLRepository text format that training/data/xc_format.hpp
reads, and labels.txt (line i names class i). --slice K keeps every K-th
definition or word, for a small variant tests can build in seconds.

gcide-nextword (dict-gcide, wordnet-base): predict each word of a dictionary
definition from the words before it. Definitions are the paragraphs of GCIDE
entries and WordNet glosses; every 10th goes to test. Classes are the words
seen at least 3 times in train, most frequent first. A sample's features are
the previous word, the one before, the one before that, the previous two as a
pair, and the headword being defined, each hashed (CRC-32) into 2^18 ids with
value 1. Test words that are not classes are not samples.

spell-670k (wamerican-insane): every word of the list is a class, in the
list's order. A sample is a seeded misspelling of it (1 or 2 random
deletions, insertions, substitutions or transpositions); its features are
the counts of its character 2- and 3-grams with ^ and $ marking the ends
(so the first and last letters count on their own), hashed into 2^17 ids.
Train holds 2 misspellings of every word; test holds a third, different one
of every 8th word.

Everything is deterministic: no wall clock, no Python hash(), one seeded
random.Random per file drawn in a fixed order, so the same packages give
byte-identical files. Only the standard library is used.
"""

import argparse
import collections
import gzip
import os
import random
import re
import sys
import time
import zlib

GCIDE_DICT = "/usr/share/dictd/gcide.dict.dz"
GCIDE_INDEX = "/usr/share/dictd/gcide.index"
WORDNET_DIR = "/usr/share/wordnet"
WORD_LIST = "/usr/share/dict/american-english-insane"

NEXTWORD_FEATURES = 1 << 18
NEXTWORD_MIN_COUNT = 3
SPELL_FEATURES = 1 << 17
SPELL_TRAIN_SPELLINGS = 2
SPELL_TEST_EVERY = 8
SEED = 20261125


class BuildError(Exception):
    pass


def need(path, package):
    if not os.path.exists(path):
        raise BuildError(f"{path} is missing: install the Debian package {package} "
                         f"(apt-get install {package}, or bash deploy/setup.sh build)")


def feature_id(text, buckets):
    return zlib.crc32(text.encode("utf-8")) & (buckets - 1)


class FeatureIds(dict):
    """text -> feature_id(text), each text hashed once."""

    def __init__(self, buckets):
        super().__init__()
        self.buckets = buckets

    def __missing__(self, text):
        fid = self[text] = feature_id(text, self.buckets)
        return fid


VALUE_ONE = [f" {i}:1" for i in range(max(NEXTWORD_FEATURES, SPELL_FEATURES))]  # most values are 1


def sample_line(label, counts):
    """One XMLRepository line: the label, then id:value by ascending id."""
    feats = [VALUE_ONE[k] if c == 1 else f" {k}:{c}" for k, c in sorted(counts.items())]
    return str(label) + "".join(feats) + "\n"


def write_task(out_dir, name, n_features, class_names, train, test):
    """Writes DIR/NAME/{train,test,labels}.txt, each all or nothing. train and
    test are (count, lines): the header comes first, so the lines can stream."""
    task_dir = os.path.join(out_dir, name)
    os.makedirs(task_dir, exist_ok=True)
    files = {
        "train.txt": (f"{train[0]} {n_features} {len(class_names)}\n", train[1]),
        "test.txt": (f"{test[0]} {n_features} {len(class_names)}\n", test[1]),
        "labels.txt": ("", (w + "\n" for w in class_names)),
    }
    total = 0
    for fname, (header, lines) in files.items():
        path = os.path.join(task_dir, fname)
        tmp = os.path.join(task_dir, "." + fname + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(header)
            written = sum(1 for line in lines if f.write(line))
        if header and written != int(header.split()[0]):
            raise BuildError(f"{path}: wrote {written} samples but counted {header.split()[0]}")
        os.replace(tmp, path)
        total += os.path.getsize(path)
    return task_dir, total


# ---------------------------------------------------------------- gcide-nextword

# GCIDE marks accented letters and ligatures as [`e], [ae], [=a]: short
# bracketed groups without spaces, kept as their letters. Longer brackets are
# etymologies and source tags ("[1913 Webster]"), dropped with their text.
ENTITY = re.compile(r"\[([^\]\s]{1,6})\]")
BRACKETS = re.compile(r"\[[^\[\]]*\]")
PRONUNCIATION = re.compile(r"\\[^\\\n]*\\")
CITATION = re.compile(r"--[A-Z][^\n]*")  # "--Shak." after a quotation
NON_LETTERS = re.compile(r"[^A-Za-z]")
PARAGRAPH = re.compile(r"\n\s*\n")
WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
BASE64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def dictd_number(text):
    value = 0
    for c in text:
        value = value * 64 + BASE64[c]
    return value


def gcide_definitions():
    """(headword, words) per definition paragraph, in the dictionary's order."""
    need(GCIDE_DICT, "dict-gcide")
    need(GCIDE_INDEX, "dict-gcide")
    with gzip.open(GCIDE_DICT) as f:  # dictzip is gzip with an index in the header
        raw = f.read()
    spans = {}  # (offset, length) -> headword; an entry with two spellings is listed twice
    with open(GCIDE_INDEX, encoding="latin-1") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise BuildError(f"{GCIDE_INDEX}, line {n}: expected headword, offset and length")
            head, off, length = parts
            if head.startswith("00-"):
                continue  # the database's own description
            span = (dictd_number(off), dictd_number(length))
            if span[0] + span[1] > len(raw):
                raise BuildError(f"{GCIDE_INDEX}, line {n}: entry past the end of {GCIDE_DICT}")
            spans.setdefault(span, head.lower())
    out = []
    for (off, length) in sorted(spans):
        # GCIDE holds a few cp1252 bytes; latin-1 maps every byte, and they
        # only split words.
        text = raw[off:off + length].decode("latin-1")
        text = ENTITY.sub(lambda m: NON_LETTERS.sub("", m.group(1)), text)
        text = BRACKETS.sub(" ", BRACKETS.sub(" ", text))  # etymologies nest one deep
        text = CITATION.sub(" ", PRONUNCIATION.sub(" ", text))
        for i, para in enumerate(PARAGRAPH.split(text)):
            if i == 0:  # the headword line; the definition starts below it
                para = para.split("\n", 1)[1] if "\n" in para else ""
            if para.lstrip().startswith("Syn:"):
                continue  # a list of synonyms, not a sentence
            words = WORD.findall(para.lower().replace("{", "").replace("}", ""))
            if len(words) >= 2:
                out.append((spans[(off, length)], words))
    return out


def wordnet_definitions():
    """(first lemma, words) per WordNet synset gloss."""
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        path = os.path.join(WORDNET_DIR, "data." + pos)
        need(path, "wordnet-base")
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue  # the licence at the top of each file
                fields = line.split(" ", 5)
                head = fields[4].replace("_", " ").lower() if len(fields) > 4 else ""
                words = WORD.findall(line.split("|", 1)[1].lower())
                if len(words) >= 2:
                    out.append((head, words))
    return out


def build_nextword(out_dir, slice_every):
    definitions = gcide_definitions() + wordnet_definitions()
    definitions = definitions[::slice_every]
    train_defs = [d for i, d in enumerate(definitions) if i % 10 != 9]
    test_defs = [d for i, d in enumerate(definitions) if i % 10 == 9]

    counts = collections.Counter(w for _, words in train_defs for w in words)
    classes = sorted((w for w, c in counts.items() if c >= NEXTWORD_MIN_COUNT), key=lambda w: (-counts[w], w))
    class_of = {w: i for i, w in enumerate(classes)}

    ids = FeatureIds(NEXTWORD_FEATURES)

    def count(defs):
        return sum(1 for _, words in defs for w in words if w in class_of)

    def samples(defs):
        for head, words in defs:
            context = ["^", "^"] + words  # ^ marks the start of the definition
            h = ids["h:" + head]
            for t, target in enumerate(words):
                label = class_of.get(target)
                if label is None:
                    continue
                w3, w2, w1 = context[t - 1] if t else "^", context[t], context[t + 1]
                yield sample_line(label, dict.fromkeys(
                    (ids["1:" + w1], ids["2:" + w2], ids["3:" + w3], ids[f"12:{w2} {w1}"], h), 1))

    return write_task(out_dir, "gcide-nextword", NEXTWORD_FEATURES, classes,
                      (count(train_defs), samples(train_defs)),
                      (count(test_defs), samples(test_defs))), len(definitions)


# ---------------------------------------------------------------- spell-670k

def misspell(word, rng, letters):
    """1 or 2 random edits; never empty, never the word itself when avoidable."""
    for _ in range(8):
        chars = list(word)
        for _ in range(1 + (rng.random() < 0.4)):
            op = int(rng.random() * 4)
            at = int(rng.random() * (len(chars) + 1))
            if op == 0 and len(chars) > 1:
                del chars[min(at, len(chars) - 1)]
            elif op == 1:
                chars.insert(at, letters[int(rng.random() * len(letters))])
            elif op == 2:
                chars[min(at, len(chars) - 1)] = letters[int(rng.random() * len(letters))]
            elif len(chars) > 1:
                i = min(at, len(chars) - 2)
                chars[i], chars[i + 1] = chars[i + 1], chars[i]
        spelling = "".join(chars)
        if spelling != word:
            return spelling
    return spelling


def build_spell(out_dir, slice_every):
    need(WORD_LIST, "wamerican-insane")
    with open(WORD_LIST, encoding="utf-8") as f:
        words = [w for w in f.read().split("\n") if w]
    words = words[::slice_every]
    if len(set(words)) != len(words):
        raise BuildError(f"{WORD_LIST} lists a word twice; classes must be distinct")
    letters = "abcdefghijklmnopqrstuvwxyz'"
    gram_ids = FeatureIds(SPELL_FEATURES)

    def line(label, spelling):
        marked = "^" + spelling + "$"
        grams = [marked[i:i + 2] for i in range(len(marked) - 1)]
        grams += [marked[i:i + 3] for i in range(len(marked) - 2)]
        return sample_line(label, collections.Counter(map(gram_ids.__getitem__, grams)))

    # One generator per file, drawn in list order: train's spellings never
    # depend on how many test spellings were drawn, and the other way round.
    train_rng, test_rng = random.Random(SEED), random.Random(SEED + 1)
    seen = {}  # label -> its train spellings, for the words test draws from

    def train():
        for label, word in enumerate(words):
            for _ in range(SPELL_TRAIN_SPELLINGS):
                spelling = misspell(word, train_rng, letters)
                if label % SPELL_TEST_EVERY == 0:
                    seen.setdefault(label, set()).add(spelling)
                yield line(label, spelling)

    def test():  # runs after train() is written, so seen is complete
        for label in range(0, len(words), SPELL_TEST_EVERY):
            # A test spelling the model saw in training would test memory.
            for _ in range(8):
                spelling = misspell(words[label], test_rng, letters)
                if spelling not in seen[label]:
                    break
            yield line(label, spelling)

    return write_task(out_dir, "spell-670k", SPELL_FEATURES, words,
                      (len(words) * SPELL_TRAIN_SPELLINGS, train()),
                      ((len(words) + SPELL_TEST_EVERY - 1) // SPELL_TEST_EVERY, test())), len(words)


TASKS = {"gcide-nextword": build_nextword, "spell-670k": build_spell}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", metavar="TASK", help="gcide-nextword, spell-670k (default: both)")
    parser.add_argument("--out", default="build/xc-data", help="data directory (default build/xc-data)")
    parser.add_argument("--slice", type=int, default=1, metavar="K",
                        help="keep every K-th definition or word (a small variant for tests)")
    args = parser.parse_args()
    if args.slice < 1:
        parser.error("--slice must be at least 1")
    for name in args.tasks:
        if name not in TASKS:
            parser.error(f"unknown task {name!r} (known: {', '.join(TASKS)})")
    for name in args.tasks or list(TASKS):
        start = time.monotonic()
        try:
            (task_dir, size), units = TASKS[name](args.out, args.slice)
        except BuildError as e:
            print(f"build_xc_datasets: {name}: {e}", file=sys.stderr)
            return 1
        heads = []
        for fname in ("train.txt", "test.txt"):
            with open(os.path.join(task_dir, fname)) as f:
                heads.append(f.readline().split())
        print(f"{name}: {heads[0][0]} train and {heads[1][0]} test samples, {heads[0][1]} features, "
              f"{heads[0][2]} classes from {units} {'definitions' if name == 'gcide-nextword' else 'words'}; "
              f"{size / 1e6:.0f} MB in {task_dir} ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
