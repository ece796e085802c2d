from citeline.core.keywords import query_terms, terms


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
