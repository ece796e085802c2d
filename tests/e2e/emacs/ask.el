;; Drives Citeline from Emacs in batch mode with eglot and the client in
;; editor-clients/emacs: waits for the folder to be ready, then M-x citeline-ask,
;; citeline-search and citeline-status, and writes what the user sees as JSON.
(package-initialize)
(require 'json)
(add-to-list 'load-path (getenv "CITELINE_EMACS_CLIENT"))
(require 'citeline)
(setq citeline-server-command (list (getenv "CITELINE_PYTHON") "-m" "citeline.cli" "serve"))
(setq citeline-initialization-options '(:answer (:maxAnswerTokens 48 :timeoutSeconds 600)))
(setq citeline-request-timeout 900)
(citeline-setup)

(defun citeline-test-finish (result)
  (with-temp-file (getenv "CITELINE_TEST_OUT")
    (insert (json-encode result)))
  (kill-emacs 0))

(defun citeline-test-here ()
  "The file and line of the selected window (where following a button went)."
  (with-current-buffer (window-buffer (selected-window))
    (list :file (buffer-file-name) :line (line-number-at-pos))))

(defun citeline-test-ready-p ()
  (let ((folders (plist-get citeline-last-status :folders)))
    (and folders (> (length folders) 0)
         (equal (plist-get (aref folders 0) :state) "ready"))))

(condition-case err
    (let ((docs (file-name-as-directory (getenv "CITELINE_TEST_DOCS")))
          (deadline (+ (float-time) (string-to-number (getenv "CITELINE_TEST_TIMEOUT")))))
      ;; docs holds citeline.toml: visiting a file in it starts Citeline.
      (find-file (expand-file-name "garden.md" docs))
      (while (and (< (float-time) deadline) (not (citeline-test-ready-p)))
        (accept-process-output nil 0.05))
      (unless (citeline-test-ready-p)
        (error "the folder never became ready"))
      (let* ((question (getenv "CITELINE_TEST_QUESTION"))
             (answer (citeline-ask-and-wait question))
             (shown (with-current-buffer "*citeline*" (buffer-string)))
             (hits (citeline-search (getenv "CITELINE_TEST_QUERY")))
             (status (citeline-status))
             marker marker-jump jump)
        ;; Follow the first [n] of the answer text, as RET on it does.
        (with-current-buffer "*citeline*"
          (goto-char (point-min))
          (forward-line 2)
          (re-search-forward "\\[[0-9]+\\]")
          (setq marker (match-string 0))
          (push-button (match-beginning 0)))
        (setq marker-jump (citeline-test-here))
        ;; Follow the first source button, as RET on it does.
        (with-current-buffer "*citeline*"
          (goto-char (point-min))
          (search-forward "Sources:")
          (forward-button 1)
          (push-button))
        (setq jump (citeline-test-here))
        ;; answer.mode = generative: the written text streams into the buffer, then
        ;; the buffer settles to the final answer.
        (jsonrpc-notify (citeline--server) :workspace/didChangeConfiguration
                        '(:settings (:citeline (:answer (:maxAnswerTokens 48 :timeoutSeconds 600
                                                         :mode "generative")))))
        (citeline-ask question)
        (let ((seen nil)
              (deadline (+ (float-time) citeline-request-timeout)))
          (while (and (null citeline-last-answer) (null citeline-last-error)
                      (< (float-time) deadline))
            (let ((now (with-current-buffer "*citeline*" (buffer-string))))
              (unless (equal now (car seen)) (push now seen)))
            (accept-process-output nil 0.02))
          (when citeline-last-error
            (error "generative ask failed: %S" citeline-last-error))
          (citeline-test-finish
           (list :answer answer :shown shown :hits hits :status status
                 :marker marker :marker_jump marker-jump :jump jump
                 :generative citeline-last-answer
                 :generative_shown (with-current-buffer "*citeline*" (buffer-string))
                 :generative_seen (vconcat (nreverse seen))
                 :model (plist-get (plist-get citeline-last-status :models) :generation))))))
  (error (citeline-test-finish (list :error (format "%S" err)))))
