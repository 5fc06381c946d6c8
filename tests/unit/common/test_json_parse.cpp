// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// json_check::parse against the library's own parser: on a corpus of valid and invalid texts
// and on 200,000 deterministic mutations of it, both accept exactly the same texts and read the
// same values (compared as the library's DOM by dump(), which tells 1 from 1.0 and -0 from 0). The library has no depth
// bound, so the depth is lifted here; BoundsTheDepth in test_json_check.cpp covers it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/json_check.hpp"
#include "json_dom_nlohmann.hpp"

namespace mcastd::json_check {
namespace {

const std::vector<std::string> &corpus() {
    static const std::vector<std::string> texts = {
        // What travels: a join request, a join reply, an error, an event.
        R"({"id":42,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:a01b::1:2","join_state":"full"})",
        R"({"id":123456,"ok":true,"result":{"membership":7,"record":{"mgid":"ff15:a01b::1:2","port_gid":"fe80::2:c903:10:3","mlid":49153,"qkey":305419896,"pkey":65535,"sl":0,"mtu":4096,"rate":16,"rate_gbps":100,"flow_label":0,"traffic_class":0,"hop_limit":0,"scope":5,"join_state":"full"}}})",
        R"({"id":null,"ok":false,"error":{"code":"sa-error","message":"SA status 0x0100","sa_status":256,"versions":[1,2]}})",
        R"({"event":"restored","membership":3,"changed":["mlid","qkey"],"record":{}})",
        // A config with comments (only in comment mode) and every kind of value.
        "{\n  // the SA\n  \"sa\": {\"timeout_ms\": 300, /* doubling */ \"tries\": 6},\n"
        "  \"rate\": 2.5e3, \"neg\": -17, \"zero\": -0, \"f\": -0.0, \"e\": 1E-2, \"b\": [true, false, null]\n}",
        // Strings: escapes, surrogate pairs, raw UTF-8 of every length, the edges of UTF-8.
        R"(["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20ac\ud83d\ude00", "Aé€😀", "\u0000x"])",
        "[\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"]",
        // Numbers at the edges of the integer types and of double.
        "[0, 1, 18446744073709551615, 18446744073709551616, -9223372036854775808, "
        "-9223372036854775809, 1.7976931348623157e308, 1e309, 5e-324, 1e-400, 0.1, 123.456e-7]",
        // Duplicates (the last wins), nesting, whitespace.
        R"({"a":1,"a":{"b":[1,{"c":2,"c":[3]}]},"z":[[[[]]]]})",
        " \t\r\n{ \"k\" : [ 1 , 2 ] } \n",
        // Invalid: each one something the grammar forbids.
        "", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "[01]", "[1.]", "[.5]", "[1e]",
        "[+1]", "[-]", "[tru]", "[nul]", "[True]", "\"abc", "\"a\\x\"", "\"\\u12\"", "\"\\ud800\"",
        "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\x01\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"", "\"\xe0\x80\xaf\"", "\"\x80\"", "[1] [2]", "{\"a\":1}}", "/* x */ 1",
        "1 // end", "[1 /* open", "[1 / 2]", "NaN", "[Infinity]", "'a'", "[\"\t\"]",
    };
    return texts;
}

// The library's verdict: the DOM's text, or nothing when it refuses the text.
std::optional<std::string> library(const std::string &text, bool comments) {
    const nlohmann::json v = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false, comments);
    if (v.is_discarded())
        return std::nullopt;
    return v.dump();
}

std::optional<std::string> ours(const std::string &text, bool comments) {
    const Parsed p = parse(text, ParseOptions{.comments = comments, .max_depth = 100000});
    if (p.syntax_error)
        return std::nullopt;
    return testing_json::to_nlohmann(p.value()).dump();
}

void expect_same(const std::string &text, bool comments) {
    if (text.find('\0') != std::string::npos)
        return; // the library's lexer stops at a NUL; ours refuses it (test_json_check.cpp)
    EXPECT_EQ(ours(text, comments), library(text, comments))
        << "text: " << testing::PrintToString(text) << (comments ? " (comments)" : "");
}

TEST(JsonParse, AgreesWithTheLibraryOnTheCorpus) {
    for (const auto &text : corpus()) {
        expect_same(text, false);
        expect_same(text, true);
    }
}

TEST(JsonParse, AgreesWithTheLibraryOnMutations) {
    // Bytes a mutation inserts: the grammar's own, and some it does not allow.
    static constexpr char kBytes[] = "{}[]:,\"\\/*ue0123456789.-+Ee tnfrl\x01\x80\xbf\xc3\xed\xf0\xff";
    std::mt19937_64 rng(20261124);
    std::size_t accepted = 0, total = 0;
    for (int round = 0; round < 200000; ++round) {
        std::string text = corpus()[rng() % corpus().size()];
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
            const char byte = kBytes[rng() % (sizeof kBytes - 1)];
            switch (rng() % 4) {
            case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), byte); break;
            case 1:
                if (at < text.size())
                    text.erase(at, 1);
                break;
            case 2:
                if (at < text.size())
                    text[at] = byte;
                break;
            default: text.resize(at); break;
            }
        }
        const bool comments = rng() % 2 == 0;
        const auto mine = ours(text, comments);
        accepted += mine.has_value();
        ++total;
        ASSERT_EQ(mine, library(text, comments))
            << "text: " << testing::PrintToString(text) << (comments ? " (comments)" : "");
    }
    // Both verdicts occur often enough for the agreement to mean something.
    EXPECT_GT(accepted, total / 20);
    EXPECT_LT(accepted, total - total / 20);
}

TEST(JsonParse, ErrorsNameLineColumnAndWhatWasExpected) {
    EXPECT_EQ(*parse("[1,\n 2,,]").syntax_error,
              "line 2, column 4: syntax error while parsing array element - unexpected ','; "
              "expected '[', '{', or a literal");
    EXPECT_EQ(*parse("{\"a\":1 \"b\"}").syntax_error,
              "line 1, column 8: syntax error while parsing object - unexpected '\"'; expected '}'");
    EXPECT_EQ(*parse("\"\\ud800x\"").syntax_error,
              "line 1, column 8: syntax error while parsing string - a high surrogate \\u escape "
              "without a low one after it");
    EXPECT_EQ(*parse("[1e999]").syntax_error, "line 1, column 2: number overflow parsing '1e999'");
}

} // namespace
} // namespace mcastd::json_check
