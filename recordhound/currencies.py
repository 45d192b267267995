"""Which currency a printed symbol, word or code names ("AU$" AUD, "zł" PLN, "EUR"), for prices.

A profile's ``currency_symbols`` beats every table here. A symbol several currencies print ("$", "¥",
"kr") names the profile's default currency when that is one of them; else its entry in SYMBOLS ("$"
USD, "¥" JPY), and "kr" names none.
"""

from __future__ import annotations

import unicodedata

# Currency symbols and words → ISO 4217. A profile's `currency_symbols` extends/overrides this.
SYMBOLS: dict[str, str] = {
    "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR",
    "$": "USD", "us$": "USD", "usd": "USD", "£": "GBP", "gbp": "GBP",
    "₽": "RUB", "руб": "RUB", "руб.": "RUB", "р.": "RUB", "rub": "RUB",
    "¥": "JPY", "jpy": "JPY", "円": "JPY", "jp¥": "JPY", "cn¥": "CNY", "元": "CNY", "rmb": "CNY",
    "zł": "PLN", "chf": "CHF", "fr.": "CHF", "sfr.": "CHF", "kč": "CZK", "ft": "HUF", "lei": "RON",
    "c$": "CAD", "ca$": "CAD", "can$": "CAD", "a$": "AUD", "au$": "AUD", "nz$": "NZD", "hk$": "HKD",
    "s$": "SGD", "sg$": "SGD", "r$": "BRL", "mx$": "MXN", "nt$": "TWD",
    "₩": "KRW", "₹": "INR", "₺": "TRY", "tl": "TRY", "₴": "UAH", "₪": "ILS",
}
# Symbols several currencies print: the profile's default currency when it is one of them, else the
# symbol's entry in SYMBOLS ("$" USD, "¥" JPY); "kr" has none, so it needs the default or the profile.
SHARED_SYMBOLS: dict[str, tuple[str, ...]] = {
    "$": ("USD", "CAD", "AUD", "NZD", "SGD", "HKD", "MXN", "TWD", "ARS", "CLP", "COP", "UYU", "CUP", "DOP",
          "JMD", "TTD", "BBD", "BSD", "BZD", "BMD", "KYD", "XCD", "GYD", "SRD", "LRD", "NAD", "FJD", "SBD", "BND"),
    "¥": ("JPY", "CNY"), "kr": ("SEK", "NOK", "DKK", "ISK"),
}
# Current ISO 4217 codes: an upper-case word printed beside an amount is a currency only if it is one.
ISO_CODES = frozenset("""
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP
CNY COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF
IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK
MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR
SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS
VES VND VUV WST XAF XCD XOF XPF YER ZAR ZMW ZWL""".split())


def currency_code(found: str | None, symbols: dict[str, str], default: str | None = None) -> str | None:
    """Map what the page printed to an ISO code; a bare 3-letter code passes as is."""
    token = (found or "").strip()
    if not token:
        return None
    code = named(token, symbols, default)
    if code:
        return code
    return token.upper() if len(token) == 3 and token.isalpha() else None


def named(token: str, symbols: dict[str, str], default: str | None) -> str | None:
    """The currency a printed symbol or word names (the profile's symbols first), None if none."""
    key = token.lower()
    profile = symbols.get(token) or symbols.get(key)
    if profile:
        return profile
    if default and default in shared_by(key):
        return default
    known = SYMBOLS.get(key) or SYMBOLS.get(key.rstrip("."))
    if known:
        return known
    return token if token.isupper() and token in ISO_CODES else None


def shared_by(token: str) -> tuple[str, ...]:
    """The currencies that print this symbol ("kr", "kr."), () if it is one currency's."""
    key = token.lower()
    return SHARED_SYMBOLS.get(key) or SHARED_SYMBOLS.get(key.rstrip("."), ())


def is_currency(word: str, symbols: dict[str, str], default: str | None) -> bool:
    """The word is a currency symbol or code, known ("€", "AU$", "EUR") or not ("₿", "XY$")."""
    return bool(word) and (any(unicodedata.category(ch) == "Sc" for ch in word)
                           or named(word, symbols, default) is not None or bool(shared_by(word)))


# ISO codes that are also ordinary upper-case words ("ALL INCLUSIVE", "TOP SELLER"): beside a symbol
# they are page text, not a second currency.
WORD_CODES = frozenset({"ALL", "TOP", "CUP", "MOP", "PEN", "MAD", "GEL", "BOB", "BAM", "SOS", "TRY"})
# Footnote marks printed right after a price or its symbol ("19,99 €¹", "€19.99*"): never part of it.
FOOTNOTE_MARKS = "¹²³⁴⁵⁶⁷⁸⁹⁰*†‡§°"


def is_code(word: str) -> bool:
    """The word is an ISO 4217 code as printed ("CAD", "EUR", "usd"), not only a symbol."""
    return (len(word) == 3 and word.upper() in ISO_CODES
            and (word.isupper() or SYMBOLS.get(word.lower()) == word.upper()))


def printed_currencies(word: str, symbols: dict[str, str], default: str | None) -> tuple[str, ...]:
    """The currency symbols and codes in one printed word, () for none.

    A symbol glued to ordinary text is still the symbol ("price€" and "€inkl." are "€", "€¹" is "€");
    an upper-case prefix is the symbol's own ("AU$", "XY$"), or an ISO code beside it ("CAD$" is "$" and
    "CAD", which decide together)."""
    word = word.strip(FOOTNOTE_MARKS)
    if not word:
        return ()
    if named(word, symbols, default) or shared_by(word):
        return (word,)
    signs = [i for i, ch in enumerate(word) if unicodedata.category(ch) == "Sc"]
    if not signs:
        return ()
    first, last = signs[0], signs[-1]
    before, sign, after = word[:first], word[first:last + 1], word[last + 1:].strip(FOOTNOTE_MARKS)
    found: tuple[str, ...] = (sign,)
    if before and before.isalpha() and before.isupper() and len(before) <= 3:
        if named(before + sign, symbols, default):
            found = (before + sign,)
        elif is_code(before):
            found = (sign, before)
        else:
            found = (before + sign,)  # "XY$": a currency recordhound does not know, not "$"
    if after and is_code(after):
        found += (after,)
    return found
