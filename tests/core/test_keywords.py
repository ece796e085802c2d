import math

import pytest

from citeline.core.keywords import bm25_idf, fold, query_terms, terms


def test_english_words_are_stemmed_and_stop_words_dropped() -> None:
    assert terms("The indexing of indexed Indexes") == ["index", "index", "index"]
    assert terms("Running runs and ran") == ["run", "run", "ran"]


def test_identifiers_keep_an_exact_joined_term_and_their_parts() -> None:
    assert terms("error E-1024") == ["error", "e1024", "e", "1024"]
    # "no" is a stop word, but the joined identifier keeps it
    assert terms("pip --no-cache-dir") == ["pip", "nocachedir", "cach", "dir"]
    assert "pghbaconf" in terms("edit pg_hba.conf now")
    assert {"pg", "hba", "conf"} <= set(terms("edit pg_hba.conf now"))
    # the same identifier in a query gives the same joined term
    assert "pghbaconf" in query_terms("Where is pg_hba.conf?")


def test_chinese_becomes_character_bigrams() -> None:
    assert terms("索引保存") == ["索引", "引保", "保存"]
    assert terms("在") == ["在"]
    assert terms("使用FAISS索引") == ["使用", "faiss", "索引"]


def test_full_width_forms_are_normalised() -> None:
    assert terms("ＦＡＩＳＳ") == ["faiss"]


def test_query_terms_are_distinct() -> None:
    assert query_terms("index the index") == ["index"]


def test_fold_removes_latin_diacritics_only() -> None:
    assert fold("café") == "cafe" and fold("naïve") == "naive" and fold("Ångström") == "Angstrom"
    assert fold("索引") == "索引" and fold("plain") == "plain"
    assert fold("ё") == "ё"  # Cyrillic keeps its marks, as FTS5's remove_diacritics=1 does


def test_bm25_idf_is_fts5s_and_never_negative() -> None:
    assert bm25_idf(100, 1) == pytest.approx(math.log(99.5 / 1.5))
    assert bm25_idf(100, 90) == 1e-6  # a term in most chunks carries ~nothing
    assert bm25_idf(10, 0) > bm25_idf(10, 3) > bm25_idf(10, 6)


def test_bm25_weight_is_a_postings_share_before_its_idf_and_below_k1_plus_1() -> None:
    from citeline.core.keywords import K1, bm25_weight

    assert bm25_weight(1, 10, 10.0) == pytest.approx(2.2 / (1 + 1.2))
    assert bm25_weight(3, 5, 10.0) > bm25_weight(1, 5, 10.0) > bm25_weight(1, 20, 10.0)
    assert bm25_weight(10_000, 0, 10.0) < K1 + 1
