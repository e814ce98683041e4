"""Tokenisation, term lists, targets, the content-keyed term counter, text resources and
counterfactual substitution."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pairmeasures.io.beir import read_beir
from pairmeasures.sideinfo import SideInfoError, resolve
from pairmeasures.sideinfo.counterfactual import CounterfactualSubstitution
from pairmeasures.sideinfo.termcount import TermCounter
from pairmeasures.sideinfo.termlists import Lexicon, parse_targets
from pairmeasures.sideinfo.tokenizers import tokenize, word_spans


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- tokenisation ----------------------------------------------------------------------------

def test_words_tokenizer_splits_at_every_non_letter():
    assert tokenize("Her mother's car -- isn't HERS_2!") == ["her", "mother", "s", "car", "isn", "t", "hers", "2"]
    assert tokenize("Émilie et Zoë—sœurs.") == ["émilie", "et", "zoë", "sœurs"]
    assert tokenize("") == []


def test_whitespace_tokenizer_is_the_reference_split():
    assert tokenize("She  said her,", "whitespace") == ["she", "", "said", "her,"]
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        tokenize("x", "spacy")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=6))
def test_batch_tokenisation_equals_one_text_at_a_time(texts):
    lexicon = Lexicon._parse(["she,female", "he,male"], "test", "words", "error")
    stats = TermCounter(lexicon).count(texts)
    expected_lengths = [len(tokenize(t)) for t in texts]
    assert stats.lengths.tolist() == expected_lengths
    counts = stats.group_counts()
    for row, text in enumerate(texts):
        tokens = tokenize(text)
        assert counts[row].tolist() == [tokens.count("she"), tokens.count("he")]


def test_word_spans_find_the_words_tokens_in_the_text():
    text = "Her mother's car -- isn't HERS_2!"
    assert [text[start:end] for start, end in word_spans(text)] == ["Her", "mother", "s", "car", "isn", "t", "HERS", "2"]
    assert list(word_spans("")) == [] and list(word_spans(" -- ")) == []
    # the documented exceptions: lower-casing changes what NFC composes
    assert [("İ"[s:e]).lower() for s, e in word_spans("İ")] == ["i\u0307"] and tokenize("İ") == ["i"]
    assert list(word_spans("H\u0331")) == [(0, 1)] and tokenize("H\u0331") == ["\u1e96"]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_word_spans_of_lower_case_nfc_text_are_its_tokens(text):
    text = unicodedata.normalize("NFC", text.lower())  # what tokenize reads (it lower-cases, then NFC-normalises)
    assert [text[start:end] for start, end in word_spans(text)] == tokenize(text, "words")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_word_spans_lower_cased_are_the_tokens_of_nfc_text(text):
    text = unicodedata.normalize("NFC", text)
    lowered = text.lower()
    assume(unicodedata.normalize("NFC", lowered) == lowered and "\u0130" not in text)  # word_spans' documented exceptions
    assert [text[start:end].lower() for start, end in word_spans(text)] == tokenize(text, "words")


# --- term lists ------------------------------------------------------------------------------

def test_builtin_gender_list_is_paired_and_single_words():
    lexicon = Lexicon.load("gender")
    assert lexicon.groups == ("female", "male")
    female, male = set(lexicon.group_terms("female")), set(lexicon.group_terms("male"))
    assert {"she", "her", "hers", "herself", "woman", "mother", "mary"} <= female
    assert {"he", "him", "his", "himself", "man", "father", "john"} <= male
    assert not female & male
    for term in lexicon.terms:  # every term swaps to a term of the other group
        other = male if term in female else female
        assert lexicon.counterparts[term] in other, term


def test_reference_word_lists_load(data_dir):
    folder = data_dir / "msmarco-gender"
    representative = Lexicon.load(str(folder / "wordlist_gender_representative.tsv"))
    assert len(representative.group_terms("female")) == 163 and len(representative.group_terms("male")) == 163
    specific = Lexicon.load(str(folder / "wordlist_genderspecific.tsv"))
    assert set(specific.terms) <= set(representative.terms)  # as the data README says


def test_term_file_errors_name_the_line(tmp_path):
    with pytest.raises(SideInfoError, match=r"line 3: duplicate term 'she' for group 'female' \(first on line 2\)"):
        Lexicon.load(write(tmp_path, "dup.csv", "term,group\nshe,female\nShe,female\n"))
    with pytest.raises(SideInfoError, match=r"line 2: term 'ex-wife' is not a single words token"):
        Lexicon.load(write(tmp_path, "multi.csv", "she,female\nex-wife,female\n"))
    with pytest.raises(SideInfoError, match=r"line 1: expected 'term,group'"):
        Lexicon.load(write(tmp_path, "short.csv", "she\n"))
    with pytest.raises(SideInfoError, match="neither a built-in list"):
        Lexicon.load(str(tmp_path / "absent.tsv"))
    with pytest.raises(SideInfoError, match="lists no terms"):
        Lexicon.load(write(tmp_path, "empty.csv", "# nothing\n"))


def test_a_term_in_two_groups_is_an_error_unless_allowed(tmp_path):
    path = write(tmp_path, "shared.tsv", "term\tgroup\nparent\tfemale\nparent\tmale\nshe\tfemale\n")
    with pytest.raises(SideInfoError, match=r"1 terms are listed for two groups, e.g. 'parent' \(female and male\)"):
        Lexicon.load(path)
    each = Lexicon.load(path, overlap="each")
    first = Lexicon.load(path, overlap="first")
    counts_each = TermCounter(each).count(["parent she"]).group_counts()
    counts_first = TermCounter(first).count(["parent she"]).group_counts()
    assert counts_each.tolist() == [[2.0, 1.0]] and counts_first.tolist() == [[2.0, 0.0]]


def test_targets_parse_and_check():
    groups = ("female", "male")
    assert parse_targets(None, groups).tolist() == [0.5, 0.5]
    assert parse_targets("male=0.7, female=0.3", groups).tolist() == [0.3, 0.7]
    with pytest.raises(SideInfoError, match="sum to 1.2; shares must sum to 1"):
        parse_targets("female=0.5,male=0.7", groups)
    with pytest.raises(SideInfoError, match=r"unknown: \['nonbinary'\]; missing: \['male'\]"):
        parse_targets("female=0.5,nonbinary=0.5", groups)
    with pytest.raises(SideInfoError, match="GROUP=SHARE"):
        parse_targets("female:0.5", groups)


# --- counting --------------------------------------------------------------------------------

def test_counter_tokenises_each_distinct_text_once():
    counter = TermCounter(Lexicon.load("gender"))
    texts = ["She met her mother.", "He left.", "She met her mother."]
    first = counter.count(texts)
    assert counter.counted == 2
    again = counter.count(texts[::-1] + ["Nobody."])
    assert counter.counted == 3  # only the new text
    np.testing.assert_array_equal(first.group_counts(), [[3, 0], [0, 1], [3, 0]])
    np.testing.assert_array_equal(again.group_counts(), [[3, 0], [0, 1], [3, 0], [0, 0]])
    assert again.lengths.tolist() == [4, 2, 4, 1]
    np.testing.assert_array_equal(first.word_counts("female").sum(axis=1), [3, 0, 3])
    once = counter.count(["She said so.", "He left."], remember=False)
    np.testing.assert_array_equal(once.group_counts(), [[1, 0], [0, 1]])
    assert counter.counted == 5 and counter.count(["She said so."]).lengths.tolist() == [3] and counter.counted == 6


def test_take_reorders_and_repeats_texts():
    stats = TermCounter(Lexicon.load("gender")).count(["she she", "he", "", "her him"])
    picked = stats.take(np.array([3, 0, 0, 2]))
    np.testing.assert_array_equal(picked.group_counts(), [[1, 1], [2, 0], [2, 0], [0, 0]])
    assert picked.lengths.tolist() == [2, 2, 2, 0]


# --- text resources --------------------------------------------------------------------------

def test_corpus_resource_reads_beir_text_with_fields(data_dir):
    source = resolve(f"corpus:{data_dir / 'grep-biasir'}?fields=title+text")
    ids = np.array(["1", "no-such-doc"], dtype=object)
    texts = source.lookup(ids, ids, {})
    assert isinstance(texts[0], str) and texts[1] is None
    assert sum(1 for _ in source.iter_texts()) == 702
    with pytest.raises(SideInfoError, match=r"resource options are fields; got \['field'\]"):
        resolve(f"corpus:{data_dir / 'grep-biasir'}?field=text")
    with pytest.raises(SideInfoError, match="corpus:/nonexistent-folder: '/nonexistent-folder' does not exist"):
        resolve("corpus:/nonexistent-folder")


def test_corpus_resource_reads_damaged_folders_strictly(data_dir, tmp_path):
    import gzip
    import shutil

    import ir_measures
    import pandas as pd

    import pairmeasures as pm

    packed = shutil.copytree(data_dir / "grep-biasir", tmp_path / "packed")
    corpus = packed / "corpus.jsonl"
    (packed / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus.read_bytes()))
    corpus.unlink()
    assert list(resolve(f"corpus:{packed}").lookup(["0"], ["0", "1"], {})) == \
        list(resolve(f"corpus:{data_dir / 'grep-biasir'}").lookup(["0"], ["0", "1"], {}))
    broken = shutil.copytree(data_dir / "grep-biasir", tmp_path / "broken")
    lines = (broken / "corpus.jsonl").read_text().splitlines()
    (broken / "corpus.jsonl").write_text("\n".join(lines[:2] + [lines[2][:40]] + lines[3:]) + "\n")
    run = pd.DataFrame({"query_id": "0", "doc_id": ["0", "1"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": "0", "doc_id": ["0", "1"], "relevance": 1})
    with pytest.raises(SideInfoError, match=r"broken/corpus\.jsonl:3: not a JSON object"):
        ir_measures.calc_aggregate([pm.TExFAIR(text=f"corpus:{broken}") @ 2], qrels, run)
    unjudged = shutil.copytree(data_dir / "grep-biasir", tmp_path / "unjudged")
    (unjudged / "qrels" / "test.tsv").unlink()
    with pytest.raises(SideInfoError, match=r"corpus:.*unjudged' is not a BEIR-layout folder: it has no qrels/test\.tsv"):
        ir_measures.calc_aggregate([pm.TExFAIR(text=f"corpus:{unjudged}") @ 2], qrels, run)
    orphan = shutil.copytree(data_dir / "grep-biasir", tmp_path / "orphan")
    with (orphan / "labels.tsv").open("a") as handle:
        handle.write("0\tno-such-doc\tfemale\n")
    with pytest.raises(SideInfoError, match=r"orphan/labels\.tsv:704: document 'no-such-doc' is not in the corpus"):
        resolve(f"corpus:{orphan}")


# --- counterfactual substitution -------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("She gave her book to him.", "He gave his book to her."),
    ("He told her the truth, and HIS mother agreed.", "She told him the truth, and HER father agreed."),
    ("The book is his.", "The book is hers."),
    ("I saw her.", "I saw him."),
    ("Mary met her own father", "John met his own mother"),
    ("Hers is better; his, too.", "His is better; hers, too."),
    ("Nothing to swap here.", "Nothing to swap here."),
])
def test_counterfactual_substitution(text, expected):
    assert CounterfactualSubstitution()(text) == expected


def test_counterfactual_substitution_is_an_involution_away_from_her():
    cds = CounterfactualSubstitution()
    text = "The woman asked her brother whether the king had met his daughter in Paris."
    assert cds(cds(text)) == text


def test_counterfactual_needs_counterparts(tmp_path):
    with pytest.raises(SideInfoError, match="have no counterpart"):
        CounterfactualSubstitution(write(tmp_path, "plain.csv", "she,female\nhe,male\n"))
    swap = CounterfactualSubstitution(write(tmp_path, "plain.csv", "she,female\nhe,male\n"), {"she": "he", "he": "she"})
    assert swap("She and he") == "He and she"
    with pytest.raises(SideInfoError, match="swaps two groups"):
        CounterfactualSubstitution(write(tmp_path, "three.csv", "a,x\nb,y\nc,z\n"))


def test_resource_options_keep_plus_signs(data_dir):
    from pairmeasures.sideinfo import resource_options

    assert resource_options("D?text=title+text&model=a%20b", ("text", "model"), "pca") == ("D", {"text": "title+text", "model": "a b"})
    source = resolve(f"pca:{data_dir / 'procon'}?text=title+text")  # once read as 'title text' and rejected
    [text] = source.documents.lookup(np.array(["abortion"]), np.array(["abortion_pro_0"]), {})
    assert text == read_beir(data_dir / "procon").document_text("abortion_pro_0", "title+text")
