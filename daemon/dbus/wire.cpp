// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/wire.hpp"

#include <cstring>

#include "common/utf8.hpp"
#include "proto/protocol.hpp"

namespace mcastd::dbus {

namespace {

Error invalid(std::string message) { return Error{Errc::invalid_argument, std::move(message), std::nullopt}; }

char type_of(const Value &v) {
    static constexpr char kTypes[] = {'y', 'q', 'u', 'd', 's'};
    return kTypes[v.index()];
}

// Reads one basic value of type `t` other than a string (already inside the variant) into an
// option value.
int read_basic(sd_bus_message *m, char t, OptionValue &out) {
    int r = 0;
    switch (t) {
    case 'y': { std::uint8_t v; r = sd_bus_message_read_basic(m, t, &v); out = std::uint64_t{v}; break; }
    case 'q': { std::uint16_t v; r = sd_bus_message_read_basic(m, t, &v); out = std::uint64_t{v}; break; }
    case 'u': { std::uint32_t v; r = sd_bus_message_read_basic(m, t, &v); out = std::uint64_t{v}; break; }
    case 't': { std::uint64_t v; r = sd_bus_message_read_basic(m, t, &v); out = v; break; }
    case 'n': { std::int16_t v; r = sd_bus_message_read_basic(m, t, &v); out = std::int64_t{v}; break; }
    case 'i': { std::int32_t v; r = sd_bus_message_read_basic(m, t, &v); out = std::int64_t{v}; break; }
    case 'x': { std::int64_t v; r = sd_bus_message_read_basic(m, t, &v); out = v; break; }
    case 'b': { int v; r = sd_bus_message_read_basic(m, t, &v); out = v != 0; break; }
    default: return -EINVAL;
    }
    return r;
}

} // namespace

int append_text(sd_bus_message *m, std::string_view s) {
    return sd_bus_message_append_basic(m, 's', valid_utf8(s).c_str());
}

int append_value(sd_bus_message *m, const Value &v) {
    return std::visit(
        [m, &v](const auto &x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::string>)
                return append_text(m, x);
            else
                return sd_bus_message_append_basic(m, type_of(v), &x);
        },
        v);
}

int append_record(sd_bus_message *m, const McRecord &record) {
    int r = sd_bus_message_open_container(m, 'a', "{sv}");
    for (const auto &e : record_entries(record)) {
        const char sig[2] = {type_of(e.value), '\0'};
        const std::string key(e.key);
        if (r >= 0) r = append_entry(m, key.c_str(), sig, [&] { return append_value(m, e.value); });
    }
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

int append_join_state_names(sd_bus_message *m, std::uint8_t bits) {
    int r = sd_bus_message_open_container(m, 'a', "s");
    for (std::uint8_t bit = 1; r >= 0 && bit <= join::send_only_full; bit = static_cast<std::uint8_t>(bit << 1))
        if (bits & bit)
            r = sd_bus_message_append_basic(m, 's', join_state_name(bit).c_str());
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

int append_state_changed(sd_bus_message *m, const std::string &state, const McRecord &record, std::uint64_t changed,
                         std::string_view reason) {
    int r = sd_bus_message_append_basic(m, 's', state.c_str());
    if (r >= 0) r = append_record(m, record);
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "s");
    for (const auto &name : proto::changed_field_names(changed))
        if (r >= 0) r = sd_bus_message_append_basic(m, 's', name.c_str());
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', valid_utf8(reason).c_str());
    return r;
}

int read_options(sd_bus_message *m, Options &out, std::optional<Error> &refused, ArgumentBound &bound, int *socket) {
    int r = sd_bus_message_enter_container(m, 'a', "{sv}");
    if (r < 0)
        return r;
    while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
        const char *key = nullptr;
        if ((r = sd_bus_message_read_basic(m, 's', &key)) < 0)
            return r;
        // Counted before anything is copied: the message may be far larger than the limit.
        if (!bound.take(kOptionBytes + std::strlen(key))) {
            refused = bound.too_large();
            return 0;
        }
        const char *contents = nullptr;
        if ((r = sd_bus_message_peek_type(m, nullptr, &contents)) < 0)
            return r;
        if (socket && std::string_view(contents) == "h" && std::string_view(key) == kSocketOption) {
            if (*socket >= 0) {
                refused = invalid(quoted_key(key) + ": given twice");
                return 0;
            }
            if ((r = sd_bus_message_enter_container(m, 'v', contents)) < 0 ||
                (r = sd_bus_message_read_basic(m, 'h', socket)) < 0 || (r = sd_bus_message_exit_container(m)) < 0 ||
                (r = sd_bus_message_exit_container(m)) < 0)
                return r;
            continue;
        }
        if (std::string_view(contents).size() != 1 || std::string_view("yqutnixbs").find(contents[0]) == std::string_view::npos) {
            refused = invalid(quoted_key(key) + ": a value of D-Bus type '" + contents +
                              "' where an integer, a boolean or a string belongs" +
                              (socket ? std::string(" (or, for \"socket\", a Unix fd)") : std::string()));
            return 0;
        }
        if ((r = sd_bus_message_enter_container(m, 'v', contents)) < 0)
            return r;
        OptionValue v;
        if (contents[0] == 's') {
            const char *text = nullptr;
            if ((r = sd_bus_message_read_basic(m, 's', &text)) < 0)
                return r;
            if (!bound.take(std::strlen(text))) {
                refused = bound.too_large();
                return 0;
            }
            v = std::string(text);
        } else if ((r = read_basic(m, contents[0], v)) < 0) {
            return r;
        }
        out.emplace_back(key, std::move(v));
        if ((r = sd_bus_message_exit_container(m)) < 0 || (r = sd_bus_message_exit_container(m)) < 0)
            return r;
    }
    if (r < 0)
        return r;
    return sd_bus_message_exit_container(m);
}

} // namespace mcastd::dbus
