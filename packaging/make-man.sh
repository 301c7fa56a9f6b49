#!/usr/bin/env bash
# Writes loopsim's man page from the CLI's own help, so the page cannot drift from the binary:
# `make-man.sh BINARY VERSION OUT`. The subcommands are the ones `loopsim --help` lists; each
# gets a subsection from its own `--help`. The help is CLI11's layout: a one-line description,
# a "Usage:" line, sections of option entries ("  SPEC   DESCRIPTION", the description at
# column 30; a longer SPEC alone, its description on the next line at column 30), then free
# text (the footer).
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: make-man.sh BINARY VERSION OUT" >&2
  exit 2
fi
binary=$1 version=$2 out=$3

# Text for roff: a backslash is \e, a dash is \- (a minus, so options paste as typed), and a
# line that starts with a dot or a quote would be a request, so \& guards it.
esc() {
  local s=${1//\\/\\e}
  s=${s//-/\\-}
  case $s in
    .* | \'*) s="\\&$s" ;;
  esac
  printf '%s' "$s"
}

# An option entry's spec: its first word (the option's names, or a positional's name) bold.
spec() {
  local first=${1%% *} rest=""
  [ "$first" = "$1" ] || rest=" $(esc "${1#* }")"
  printf '\\fB%s\\fR%s' "$(esc "$first")" "$rest"
}

# CLI11's section headings; any other line at the left margin begins the footer. A footer may
# have a heading of its own ("Exit status:") followed by indented entries, so headings are
# known by name, not by shape.
is_section() {
  case $1 in
    Positionals: | Options: | Subcommands: | Flags:) return 0 ;;
  esac
  return 1
}

# The body of one command's help (everything after its Usage: line) as roff.
body() {
  local split='^  ([^ ].*[^ ]|[^ ])  +([^ ].*)$' alone='^  ([^ ].*)$' deeper='^   +([^ ].*)$'
  local tagged='^ {1,4}([^ ]+)  +([^ ].*)$' indented='^ +([^ ].*)$'
  local mode=start line entry="" name
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%$'\r'}
    if [ -z "$line" ]; then
      [ "$mode" != footer ] || echo ".PP"
      entry=""
      continue
    fi
    if [ "$mode" != footer ] && is_section "$line"; then
      mode=section entry=""
      printf '.PP\n\\fI%s\\fR\n' "$(esc "$line")"
      continue
    fi
    if [ "$mode" = section ]; then
      if [[ $line =~ $split ]]; then
        printf '.TP\n%s\n%s\n' "$(spec "${BASH_REMATCH[1]}")" "$(esc "${BASH_REMATCH[2]}")"
        entry=1
        continue
      elif [[ $line =~ $alone ]]; then
        # A spec of 27 characters leaves a single space before the description's column.
        if [ ${#line} -gt 30 ] && [ "${line:29:1}" = " " ] && [ "${line:30:1}" != " " ]; then
          name=${line:2:27}
          printf '.TP\n%s\n%s\n' "$(spec "$name")" "$(esc "${line:30}")"
        else
          printf '.TP\n%s\n' "$(spec "${BASH_REMATCH[1]}")"
        fi
        entry=1
        continue
      elif [[ $line =~ $deeper ]] && [ -n "$entry" ]; then
        esc "${BASH_REMATCH[1]}"; echo
        continue
      fi
      mode=footer entry=""
      echo ".PP"
    fi
    # The footer: prose at the margin is filled; an indented "TAG  TEXT" line is a tagged
    # entry (an exit status and its meaning), deeper lines continue it; any other indented
    # line keeps its line break.
    if [[ $line =~ $tagged ]]; then
      printf '.TP\n%s\n%s\n' "$(spec "${BASH_REMATCH[1]}")" "$(esc "${BASH_REMATCH[2]}")"
      entry=1
    elif [[ $line =~ $indented ]]; then
      if [ -n "$entry" ]; then
        esc "${BASH_REMATCH[1]}"; echo
      else
        printf '.br\n%s\n' "$(esc "${BASH_REMATCH[1]}")"
      fi
    else
      if [ -n "$entry" ]; then
        echo ".PP"
        entry=""
      fi
      mode=footer
      esc "$line"; echo
    fi
  done
}

help_of() {
  local text
  if ! text=$("$binary" "$@" --help); then
    echo "make-man.sh: $binary $* --help failed" >&2
    return 1
  fi
  printf '%s\n' "$text"
}

# "Usage: ./path/loopsim run [OPTIONS] file" as the command's words and the rest.
usage_rest() {
  local re='^Usage: +[^ ]+( (.*))?$'
  [[ $1 =~ $re ]] || { echo "make-man.sh: no Usage: line in: $1" >&2; return 1; }
  local rest=${BASH_REMATCH[2]}
  shift
  local word
  for word in "$@"; do rest=${rest#"$word"}; rest=${rest# }; done
  printf '%s' "$rest"
}

top=$(help_of)
tagline=$(sed -n 1p <<<"$top")
tagline=${tagline#loopsim: }
top_usage=$(sed -n 2p <<<"$top")
commands=$(sed -n '/^Subcommands:$/,/^$/s/^  \([a-z][a-z0-9-]*\)  .*/\1/p' <<<"$top")
if [ -z "$commands" ]; then
  echo "make-man.sh: loopsim --help lists no subcommands" >&2
  exit 1
fi

date=""
[ -z "${SOURCE_DATE_EPOCH:-}" ] || date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)

tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
  echo ".\\\" The text of this page is loopsim's --help output; packaging/make-man.sh writes it."
  printf '.TH LOOPSIM 1 "%s" "loopsim %s" "User Commands"\n' "$date" "$(esc "$version")"
  # Option names and identifiers read badly broken at a line's end or stretched apart.
  printf '.nh\n.ad l\n'
  printf '.SH NAME\nloopsim \\- %s\n' "$(esc "$tagline")"
  echo ".SH SYNOPSIS"
  printf '.B loopsim\n%s\n' "$(esc "$(usage_rest "$top_usage")")"
  for command in $commands; do
    usage=$(help_of "$command" | sed -n 2p)
    printf '.br\n.B loopsim %s\n%s\n' "$command" "$(esc "$(usage_rest "$usage" "$command")")"
  done
  echo ".SH DESCRIPTION"
  printf '%s\n' "$(esc "${tagline^}.")"
  tail -n +3 <<<"$top" | body
  echo ".SH COMMANDS"
  for command in $commands; do
    help=$(help_of "$command")
    printf '.SS "loopsim %s"\n' "$command"
    esc "$(sed -n 1p <<<"$help")"; echo
    printf '.PP\n\\fBloopsim %s\\fR %s\n' "$command" "$(esc "$(usage_rest "$(sed -n 2p <<<"$help")" "$command")")"
    tail -n +3 <<<"$help" | body
  done
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
