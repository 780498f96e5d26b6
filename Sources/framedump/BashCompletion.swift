/// The parser's bash completion, with the default subcommand's options offered at the top level
/// (`framedump --fo<TAB>`, `framedump -T <TAB>`), as the command line accepts them there.
enum BashCompletion {
    /// The subcommands' names as the parser's script lists them (`help` last).
    static var names: String {
        (Framedump.configuration.subcommands.map { $0._commandName } + ["help"]).joined(separator: " ")
    }

    static var subcommandFallback: String { """
            *)
                # Offer subcommand completions
                COMPREPLY+=($(compgen -W '\(names)' -- "${cur}"))
                ;;
        """
    }

    static var defaultSubcommand: String { """
            *)
                # No subcommand: `dump` is the default. The first word may still be a subcommand;
                # past it, or for an option, complete as dump does.
                if [[ "${COMP_CWORD}" -eq 1 && "${cur}" != -* ]]; then
                    COMPREPLY+=($(compgen -W '\(names)' -- "${cur}"))
                else
                    COMPREPLY=()
                    unparsed_words=("${subcommand}" "${unparsed_words[@]}")
                    _framedump_dump
                fi
                ;;
        """
    }

    /// The script with the top-level fallback replaced; unchanged if the parser's script no
    /// longer has that shape (a test notices).
    static func withDefaultSubcommand(_ script: String) -> String {
        guard let r = script.range(of: subcommandFallback) else { return script }
        return script.replacingCharacters(in: r, with: defaultSubcommand)
    }
}
